import { RuntimeApiError } from '../errors.js';
import { type Store } from './store.js';

/**
 * A create call's clientToken: the response of an earlier call with the same token and parameters
 * (`replay`), a 400 when the parameters differ, and `remember` to keep this call's response.
 */
export function idempotentCall(
  store: Store,
  token: string | undefined,
  op: string,
  body: Record<string, unknown>,
) {
  if (!token) return { replay: undefined, remember: () => Promise.resolve() };
  const key = `${op}:${token}`;
  const { clientToken: _ignored, ...rest } = body;
  const fingerprint = JSON.stringify(rest);
  const seen = store.get('idempotency', key);
  if (seen && seen.fingerprint !== fingerprint)
    throw new RuntimeApiError(
      'ValidationException',
      `clientToken ${token} was already used with different parameters`,
      {
        reason: 'IdempotentParameterMismatchException',
        fieldList: [{ name: 'clientToken', message: 'reused with different parameters' }],
      },
    );
  return {
    replay: seen?.response,
    remember: (response: unknown) => store.put('idempotency', key, { fingerprint, response }),
  };
}

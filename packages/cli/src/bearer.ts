// --bearer <token> / --bearer-env <var>: the token for runtimes created with a JWT authorizer,
// shared by `agentrt invoke` and `agentrt sessions stop`.
import { UsageError } from './command.js';

export const BEARER_OPTIONS = {
  bearer: { type: 'string' },
  'bearer-env': { type: 'string' },
} as const;

/** --bearer <token> or --bearer-env <var> (one of them, and the variable must be set). */
export function bearerFrom(
  values: { bearer?: string; 'bearer-env'?: string },
  env: NodeJS.ProcessEnv,
): string | undefined {
  if (values.bearer !== undefined && values['bearer-env'] !== undefined)
    throw new UsageError('give --bearer <token> or --bearer-env <var>, not both');
  if (values.bearer !== undefined) {
    if (values.bearer.trim() === '') throw new UsageError('--bearer needs a token');
    return values.bearer.trim().replace(/^Bearer\s+/i, '');
  }
  const name = values['bearer-env'];
  if (name === undefined) return undefined;
  const token = env[name]?.trim();
  if (!token)
    throw new UsageError(`--bearer-env ${name}: the environment variable ${name} is not set or empty`);
  return token.replace(/^Bearer\s+/i, '');
}

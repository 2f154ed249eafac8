// How the caller of a session's start hears its outcome: a failure as the AWS error it maps to, and
// a start that takes longer than the caller may wait (a pod's) as a 503 to retry.
import { RuntimeApiError } from '../errors.js';
import { type Session } from './session.js';
import { BackendUnavailableError } from './worker.js';

/** A failed start as the caller hears it: 503 when the cluster is unreachable, else 424. */
export function startFailure(error: unknown): RuntimeApiError {
  if (error instanceof RuntimeApiError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof BackendUnavailableError)
    return new RuntimeApiError(
      'ServiceException',
      message,
      {},
      { cause: error, headers: { 'retry-after': '5' } },
    );
  return new RuntimeApiError('RuntimeClientError', message, {}, { cause: error });
}

/**
 * Waits for a session's start. A pod (kubernetes: `holdMs` set) is waited for up to the hold
 * budget: past it the caller hears 503 with Retry-After while the pod goes on starting, and a retry
 * finds it. A local worker is waited for until it is ready or its start fails (its start timeout).
 */
export async function holdStart(session: Session, started: Promise<void>, holdMs?: number): Promise<void> {
  started.catch(() => undefined); // heard by whoever still holds it; a caller past its budget does not
  if (holdMs === undefined) return started;
  let timer: NodeJS.Timeout | undefined;
  const budget = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), holdMs);
  });
  const ready = await Promise.race([started.then(() => true), budget]).finally(() => clearTimeout(timer));
  if (ready) return;
  const pod = session.worker?.podName ?? 'not made yet';
  throw new RuntimeApiError(
    'ServiceException',
    `Session ${session.sessionId} is still starting (pod ${pod} not Ready after ${holdMs} ms); retry`,
    {},
    { headers: { 'retry-after': String(Math.max(1, Math.ceil(holdMs / 6000))) } },
  );
}

// GET /local/sessions: the live sessions of this runtime with their state, times, CPU and memory.
// Not part of the AWS API (the hosted service has no listing of sessions); `agentrt sessions
// --active` reads it. It answers only callers on the loopback interface, after the same
// authentication as the control plane, since session ids are what a caller needs to reach a session.
import { type IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { parseRuntimeArn } from '../control/arn.js';
import { getRuntimeOr404, getVersionOr404 } from '../control/records.js';
import { type Store } from '../control/store.js';
import { type Authenticator } from '../data/auth.js';
import { RuntimeApiError } from '../errors.js';
import { sendJson } from '@agentrt/kit';
import { readBody } from '../http/http-util.js';
import { type Router } from '../http/router.js';
import { type SessionManager } from '../sessions/session-manager.js';
import { createUsageSampler } from '../telemetry/process-usage.js';

export const ACTIVE_SESSIONS_PATH = '/local/sessions';
/** Gives a runtime's live sessions fresh workers (`agentrt dev`'s hot reload). */
export const RESTART_SESSIONS_PATH = '/local/runtimes/:runtime/sessions/restart';

function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const plain = address.startsWith('::ffff:') ? address.slice(7) : address;
  return isIP(plain) === 4 ? plain.startsWith('127.') : plain === '::1';
}

/** The /local routes answer only callers on the loopback interface, authenticated. */
async function assertLocalCaller(req: IncomingMessage, auth: Authenticator): Promise<void> {
  if (!isLoopback(req.socket.remoteAddress))
    throw new RuntimeApiError(
      'AccessDeniedException',
      `${req.url?.split('?')[0] ?? '/local'} answers only on the loopback interface (it is not part of the AWS API)`,
    );
  await auth.authenticate(req);
}

export function registerActiveSessions(
  router: Router,
  deps: { store: Store; auth: Authenticator; sessions: Pick<SessionManager, 'list' | 'restart'> },
): void {
  const sampler = createUsageSampler();
  router.add('POST', RESTART_SESSIONS_PATH, async ({ req, res, params }) => {
    await assertLocalCaller(req, deps.auth);
    await readBody(req, 1024);
    const label = params.runtime ?? '';
    const runtime = getRuntimeOr404(deps.store, parseRuntimeArn(label)?.runtimeId ?? label);
    const restarted = await deps.sessions
      .restart(runtime.id, (s) => ({ runtime, version: getVersionOr404(deps.store, runtime.id, s.version) }))
      .catch((error: unknown) => {
        throw new RuntimeApiError(
          'RuntimeClientError',
          `a new worker did not start: ${(error as Error).message}`,
        );
      });
    sendJson(res, 200, { restarted });
  });
  router.add('GET', ACTIVE_SESSIONS_PATH, async ({ req, res }) => {
    await assertLocalCaller(req, deps.auth);
    const live = deps.sessions.list();
    const usage = sampler.sample(
      live.flatMap((s) =>
        s.worker?.pid
          ? [{ key: `${s.runtimeId}#${s.sessionId}`, pid: s.worker.pid, cgroup: () => s.worker?.usage() }]
          : [],
      ),
    );
    sendJson(res, 200, {
      sessions: live.map((s) => {
        const runtime = deps.store.get('runtime', s.runtimeId);
        const used = usage.get(`${s.runtimeId}#${s.sessionId}`);
        return {
          sessionId: s.sessionId,
          runtimeId: s.runtimeId,
          runtimeName: runtime?.name ?? s.runtimeId,
          runtimeArn: runtime?.arn ?? '',
          version: s.version,
          state: s.state,
          pid: s.worker?.pid ?? null,
          startedAt: new Date(s.startedAtMs).toISOString(),
          lastActivityAt: new Date(s.lastActivityMs).toISOString(),
          inflight: s.inflight,
          warm: s.warm,
          cpuSeconds: used ? Math.round(used.cpuSeconds * 100) / 100 : null,
          rssBytes: used?.rssBytes ?? null,
          usageSource: used?.source ?? null,
        };
      }),
    });
  });
}

import { type IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { checkRequest } from '@agentrt/propagation';
import { type RuntimeConfig } from '../config.js';
import { RuntimeApiError } from '../errors.js';

/**
 * The runtime's Host and cross-site checks (the request guard the collector uses too): a request
 * whose `Host` is not a loopback name, an IP literal, the runtime's own bind name or one of
 * AGENTRT_RUNTIME_ALLOWED_HOSTS is refused (DNS rebinding), and so is a state-changing request a
 * browser sent from another site (CSRF) — including a WebSocket upgrade, which browsers send
 * cross-origin without asking. Payloads of any content type stay allowed: InvokeAgentRuntime
 * carries the caller's own content type (text/plain too); only their cross-site use is refused.
 * Throws a RuntimeApiError (400 ValidationException, 403 AccessDeniedException).
 */
export function guardRuntimeRequest(
  req: IncomingMessage,
  config: Pick<RuntimeConfig, 'host' | 'allowedHosts' | 'allowedOrigins'>,
  { upgrade = false } = {},
): void {
  const own = isIP(config.host) || config.host === '0.0.0.0' ? [] : [config.host];
  const refusal = checkRequest(upgrade ? { method: 'POST', headers: req.headers } : req, {
    allowedHosts: [...own, ...config.allowedHosts],
    allowedOrigins: config.allowedOrigins,
    allowSimpleBodies: true,
  });
  if (!refusal) return;
  const message =
    refusal.code === 'host_not_allowed'
      ? `${refusal.message} (AGENTRT_RUNTIME_ALLOWED_HOSTS)`
      : refusal.message;
  throw new RuntimeApiError(
    refusal.status === 403 ? 'AccessDeniedException' : 'ValidationException',
    message,
  );
}

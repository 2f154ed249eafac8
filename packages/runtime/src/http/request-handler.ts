import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type ServerResponse } from 'node:http';
import { type RuntimeConfig } from '../config.js';
import { RuntimeApiError } from '../errors.js';
import { type Logger } from '../logger.js';
import { UNTRACED_OPERATION } from '../telemetry/operation.js';
import { operationName } from '../telemetry/operations.js';
import { type RuntimeTelemetry } from '../telemetry/runtime-telemetry.js';
import { handleCors } from './cors.js';
import { guardRuntimeRequest } from './request-guard.js';
import { type Router } from './router.js';
import { sendError } from './send-error.js';

export interface RequestHandlerDeps {
  config: Readonly<RuntimeConfig>;
  router: Router;
  telemetry: Pick<RuntimeTelemetry, 'startOperation'>;
  logger: Logger;
}

type Match = ReturnType<Router['match']>;

/** The route for the path, or the error a malformed path raised: answered inside the operation's span. */
function matchRoute(
  router: Router,
  method: string,
  rawPath: string,
): { found?: Match; matchError?: unknown } {
  try {
    return { found: router.match(method, rawPath) };
  } catch (error) {
    return { matchError: error };
  }
}

/** The miss a request without a route gets: a 405-like one when the path has other methods. */
function routeMiss(found: { methodMismatch: boolean }, req: IncomingMessage, url: URL): RuntimeApiError {
  return found.methodMismatch
    ? new RuntimeApiError('ValidationException', `method ${req.method} is not allowed on ${url.pathname}`)
    : new RuntimeApiError('ResourceNotFoundException', `No operation at ${req.method} ${url.pathname}`);
}

/**
 * Every HTTP request of the runtime's port: its request id, CORS preflights, the operation's span,
 * the request guard, the route, and any error through `sendError`.
 */
export function createRequestHandler(
  deps: RequestHandlerDeps,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const { config, router, telemetry, logger } = deps;
  return async (req, res) => {
    const requestId = randomUUID();
    res.setHeader('x-amzn-requestid', requestId);
    // A preflight from an allowed origin (the Inspector page) is answered here, untraced.
    if (handleCors(req, res, config.allowedOrigins)) return;
    const rawPath = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    const { found, matchError } = matchRoute(router, method, rawPath);
    const pattern = found && 'pattern' in found ? found.pattern : undefined;
    const name = operationName(method, pattern);
    const operation =
      name === null ? UNTRACED_OPERATION : telemetry.startOperation(name, req, res, requestId, pattern);
    try {
      const url = new URL(req.url ?? '/', 'http://localhost');
      guardRuntimeRequest(req, config);
      if (found === undefined) throw matchError;
      if (!('handler' in found)) throw routeMiss(found, req, url);
      await found.handler({ req, res, params: found.params, query: url.searchParams, requestId, operation });
    } catch (error) {
      operation.fail(error);
      sendError(res, error, requestId, logger);
    }
  };
}

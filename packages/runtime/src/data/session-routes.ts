// The data-plane operations on a running session rather than through it: StopRuntimeSession, and
// InvokeAgentRuntimeCommand — a shell command in the session's sandbox, streamed back as an AWS
// event stream (commands.ts runs it). Both need the caller's session id; a command never starts a
// session.
import { sendJson } from '@agentrt/kit';
import { notFound } from '../errors.js';
import { readBody, readJsonObject } from '../http/http-util.js';
import { type Router } from '../http/router.js';
import { parseCommandRequest, runCommand } from './commands.js';
import { SESSION_HEADER } from './forward-headers.js';
import { type DataRouteDeps } from './session-calls.js';

export function registerSessionRoutes(router: Router, { config, sessions, requests }: DataRouteDeps): void {
  router.add('POST', '/runtimes/:runtime/stopruntimesession', async (ctx) => {
    const { runtime } = await requests.admit(ctx);
    const sessionId = requests.sessionIdOf(ctx.req, true);
    ctx.operation.setSession(sessionId);
    await readBody(ctx.req, 1_000_000);
    await sessions.stop(runtime.id, sessionId);
    ctx.res.setHeader(SESSION_HEADER, sessionId);
    sendJson(ctx.res, 200, {});
  });

  // A session that is not running is a 404: commands join sessions, they do not start them.
  router.add('POST', '/runtimes/:runtime/commands', async (ctx) => {
    const { runtime, version } = await requests.admit(ctx);
    const sessionId = requests.sessionIdOf(ctx.req, true);
    ctx.operation.setSession(sessionId);
    const request = parseCommandRequest(await readJsonObject(ctx.req, 1_000_000), config.commandMaxTimeoutS);
    if (!sessions.get(runtime.id, sessionId))
      throw notFound(
        `Session ${sessionId} is not running on agent runtime ${runtime.id}: invoke the runtime with this session id first`,
      );
    const session = await sessions.acquire({ runtime, version }, sessionId);
    try {
      ctx.res.writeHead(200, {
        'content-type': 'application/vnd.amazon.eventstream',
        [SESSION_HEADER]: sessionId,
        'x-amzn-requestid': ctx.requestId,
      });
      ctx.res.flushHeaders();
      await runCommand(sessions, session, request, ctx.res);
    } finally {
      sessions.release(session);
    }
  });
}

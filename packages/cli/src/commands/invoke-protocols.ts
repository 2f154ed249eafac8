import { type RuntimeClient, SESSION_HEADER } from '@agentrt/runtime';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebSocket } from 'ws';
import { type CliIO, UsageError } from '../command.js';

interface Target {
  client: RuntimeClient;
  arn: string;
  qualifier?: string;
  sessionId?: string;
  /** `--bearer` / `--bearer-env`: sent as `Authorization: Bearer` (JWT runtimes). */
  bearerToken?: string;
}

/** The headers of every protocol request: the client's, the session id and the bearer token. */
function targetHeaders(target: Target): Record<string, string> {
  return {
    ...target.client.headers(),
    ...(target.sessionId ? { [SESSION_HEADER]: target.sessionId } : {}),
    ...(target.bearerToken ? { authorization: `Bearer ${target.bearerToken}` } : {}),
  };
}

const QUIET_MS = 500;
const MAX_DRAIN_MS = 10_000;

const print = (io: CliIO, value: unknown) => io.stdout(`${JSON.stringify(value, null, 2)}\n`);

/**
 * `--mcp list-tools | call-tool <name> '<json>'`: the official MCP client against the runtime's
 * invocation URL. The runtime session comes from `--session` or from the MCP session.
 */
export async function invokeMcp(target: Target, args: string[], io: CliIO): Promise<number> {
  const [action, name, json = '{}', ...extra] = args;
  if (action !== 'list-tools' && action !== 'call-tool')
    throw new UsageError(`--mcp takes list-tools or call-tool <name> '<json>', not '${action ?? ''}'`);
  if (action === 'call-tool' && !name) throw new UsageError('--mcp call-tool needs a tool name');
  if (extra.length || (action === 'list-tools' && name))
    throw new UsageError(`unexpected argument '${extra[0] ?? name}'`);
  let toolArgs: Record<string, unknown> = {};
  if (action === 'call-tool') {
    try {
      toolArgs = JSON.parse(json) as Record<string, unknown>;
    } catch (error) {
      throw new UsageError(`the tool arguments are not valid JSON: ${(error as Error).message}`);
    }
    if (typeof toolArgs !== 'object' || toolArgs === null || Array.isArray(toolArgs))
      throw new UsageError('the tool arguments must be a JSON object');
  }
  const url = new URL(target.client.invocationUrl(target.arn, target.qualifier));
  const headers = targetHeaders(target);
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
  const mcp = new Client({ name: 'agentrt-cli', version: '0.1.0' });
  await mcp.connect(transport);
  try {
    io.stderr(`mcp session ${transport.sessionId ?? '(none)'}\n`);
    if (action === 'list-tools') {
      const { tools } = await mcp.listTools();
      for (const tool of tools) io.stdout(`${tool.name}\t${tool.description ?? ''}\n`);
      return 0;
    }
    const result = await mcp.callTool({ name: name!, arguments: toolArgs });
    const content = (result.content ?? []) as { type: string; text?: string }[];
    for (const part of content) {
      if (part.type === 'text') io.stdout(`${part.text ?? ''}\n`);
      else print(io, part);
    }
    return result.isError ? 1 : 0;
  } finally {
    await mcp.close();
  }
}

/**
 * `--exec '<command>'`: InvokeAgentRuntimeCommand in the session given by `--session` (a command
 * joins a running session). stdout and stderr stream to ours; the exit code is the command's.
 */
export async function invokeExec(
  target: Target,
  command: string,
  timeoutS: number | undefined,
  io: CliIO,
): Promise<number> {
  if (!target.sessionId)
    throw new UsageError(
      '--exec runs in a live session: give --session <id> (invoke the runtime with it first)',
    );
  const events = await target.client.runCommand(target.arn, target.sessionId, command, {
    ...(timeoutS ? { timeoutS } : {}),
    ...(target.qualifier ? { qualifier: target.qualifier } : {}),
    ...(target.bearerToken ? { bearerToken: target.bearerToken } : {}),
  });
  for await (const event of events) {
    if (event.contentDelta?.stdout) io.stdout(event.contentDelta.stdout);
    if (event.contentDelta?.stderr) io.stderr(event.contentDelta.stderr);
    if (event.contentStop) {
      if (event.contentStop.status === 'TIMED_OUT')
        io.stderr(`command timed out (exit code ${event.contentStop.exitCode})\n`);
      return event.contentStop.exitCode;
    }
  }
  io.stderr('the command stream ended without contentStop\n');
  return 1;
}

/**
 * `--ws`: a WebSocket to the runtime's `/ws` in the session; each input line goes out as a text
 * frame, each frame received prints as a line (binary as base64). Ends when input ends (close
 * 1000) or the other side closes (its code on stderr; exit 0 for 1000, else 1).
 */
export async function invokeWebSocket(target: Target, io: CliIO): Promise<number> {
  const url = target.client.webSocketUrl(target.arn, target.qualifier);
  const headers = targetHeaders(target);
  const socket = new WebSocket(url, { headers });
  const closed = new Promise<number>((resolve, reject) => {
    socket.on('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        let message = body;
        try {
          message = (JSON.parse(body) as { message?: string }).message ?? body;
        } catch {
          // not JSON: keep the raw text
        }
        reject(
          new Error(`${String(res.headers['x-amzn-errortype'] ?? 'Error')} (${res.statusCode}): ${message}`),
        );
      });
    });
    socket.on('error', reject);
    socket.on('close', (code, reason) => {
      io.stderr(`closed ${code}${reason.length ? ` ${reason.toString()}` : ''}\n`);
      resolve(code === 1000 || code === 1005 ? 0 : 1);
    });
  });
  const activity = { at: Date.now() };
  socket.on('message', (data: Buffer, isBinary) => {
    activity.at = Date.now();
    io.stdout(`${isBinary ? `<binary ${data.toString('base64')}>` : data.toString('utf8')}\n`);
  });
  await Promise.race([new Promise((r) => socket.once('open', r)), closed]);
  io.stderr(`connected ${url}\n`);
  if (io.stdin) {
    let pending = '';
    for await (const chunk of io.stdin) {
      if (socket.readyState !== WebSocket.OPEN) break;
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) socket.send(line);
      activity.at = Date.now();
    }
    if (pending && socket.readyState === WebSocket.OPEN) socket.send(pending);
    activity.at = Date.now();
    // Input is over: let the answers in flight arrive (quiet for QUIET_MS, at most MAX_DRAIN_MS).
    const until = Date.now() + MAX_DRAIN_MS;
    while (socket.readyState === WebSocket.OPEN && Date.now() < until && Date.now() - activity.at < QUIET_MS)
      await new Promise((r) => setTimeout(r, 50));
    if (socket.readyState === WebSocket.OPEN) socket.close(1000);
  }
  return closed;
}

import { type Command, type CliIO, UsageError, parseCommandArgs } from '../command.js';
import { BEARER_OPTIONS, bearerFrom } from '../bearer.js';
import { invokeExec, invokeMcp, invokeWebSocket } from './invoke-protocols.js';
import { clientFrom } from './runtime.js';

const usage = `Usage: agentrt invoke <runtime> '<json>' [--session <id>] [--stream] [--qualifier <endpoint>]
       [--bearer <token> | --bearer-env <var>] [--json]
       agentrt invoke <runtime> --mcp list-tools | --mcp call-tool <name> '<json>' [--session <id>]
       agentrt invoke <runtime> --exec '<command>' --session <id> [--timeout <s>]
       agentrt invoke <runtime> --ws [--session <id>]
       (--bearer <token> | --bearer-env <var> work with each of them)

Invokes an agent runtime (name, id or ARN) with a JSON payload and prints the answer as it arrives.
  --session <id>     reuse a session (33–256 chars); without it a new session id is made and printed
  --stream           ask for text/event-stream; SSE data frames print one per line as they arrive
  --qualifier <ep>   endpoint name (default DEFAULT, the latest version; see \`agentrt runtime endpoints\`)
  --bearer <token>   send Authorization: Bearer <token> (runtimes created with --jwt-discovery-url)
  --bearer-env <var> the same, with the token read from environment variable <var> (keeps it out of
                     your shell history and the process list)
  --json             print the body exactly as received (no pretty-printing or SSE unwrapping)
  --url <url>        the runtime (default $AGENTRT_RUNTIME_URL or http://127.0.0.1:8787)
  --api-key <key>    sent as x-api-key (default $AGENTRT_API_KEY)
  --mcp              an MCP runtime: list-tools, or call-tool <name> '<json>' (official MCP client)
  --exec <command>   run a shell command in the live session --session (InvokeAgentRuntimeCommand);
                     its stdout/stderr stream to ours and its exit code is ours
  --timeout <s>      --exec: seconds before the command is killed (default 300)
  --ws               a WebSocket to the runtime's /ws: each line typed is a text frame, each frame
                     received prints as a line (binary as base64)

The session id goes to stderr, so stdout carries only the answer.`;

const options = {
  session: { type: 'string' },
  stream: { type: 'boolean', default: false },
  qualifier: { type: 'string' },
  json: { type: 'boolean', default: false },
  url: { type: 'string' },
  'api-key': { type: 'string' },
  mcp: { type: 'boolean', default: false },
  exec: { type: 'string' },
  timeout: { type: 'string' },
  ws: { type: 'boolean', default: false },
  ...BEARER_OPTIONS,
} as const;

type Values = ReturnType<
  typeof parseCommandArgs<{ options: typeof options; allowPositionals: true }>
>['values'];

export const invokeCommand: Command = {
  name: 'invoke',
  summary: 'invoke an agent runtime: a JSON payload, MCP tools, a command in a session, a WebSocket',
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs({ args: argv, allowPositionals: true, options });
    const bearerToken = bearerFrom(values, io.env);
    const [ref, payload = '{}', ...extra] = positionals;
    if (!ref) throw new UsageError('missing <runtime>');
    const modes = [values.mcp, values.exec !== undefined, values.ws].filter(Boolean).length;
    if (modes > 1) throw new UsageError('give at most one of --mcp, --exec and --ws');
    if (modes === 1) return invokeOtherProtocol(values, positionals, bearerToken, io);
    if (extra.length) throw new UsageError(`unexpected argument '${extra[0]}' (quote the JSON payload)`);
    try {
      JSON.parse(payload);
    } catch (error) {
      throw new UsageError(`the payload is not valid JSON: ${(error as Error).message}`);
    }
    const client = clientFrom(values, io);
    const runtime = await client.resolve(ref);
    const result = await client.invoke(runtime.agentRuntimeArn, payload, {
      ...(values.session ? { sessionId: values.session } : {}),
      ...(values.qualifier ? { qualifier: values.qualifier } : {}),
      ...(bearerToken ? { bearerToken } : {}),
      accept: values.stream ? 'text/event-stream, application/json' : 'application/json, text/event-stream',
    });
    io.stderr(`session ${result.sessionId}\n`);
    await printAnswer(result, values, io);
    return 0;
  },
};

/** `--mcp`, `--exec` or `--ws`: the runtime through its other protocols. */
async function invokeOtherProtocol(
  values: Values,
  positionals: string[],
  bearerToken: string | undefined,
  io: CliIO,
): Promise<number> {
  const client = clientFrom(values, io);
  const target = {
    client,
    arn: (await client.resolve(positionals[0]!)).agentRuntimeArn,
    ...(values.qualifier ? { qualifier: values.qualifier } : {}),
    ...(values.session ? { sessionId: values.session } : {}),
    ...(bearerToken ? { bearerToken } : {}),
  };
  if (values.mcp) return invokeMcp(target, positionals.slice(1), io);
  if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
  if (values.ws) return invokeWebSocket(target, io);
  const timeout = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeout !== undefined && !(Number.isInteger(timeout) && timeout > 0))
    throw new UsageError(`--timeout must be a whole number of seconds, got '${values.timeout}'`);
  return invokeExec(target, values.exec as string, timeout, io);
}

/**
 * Prints the answer as it arrives: SSE as one line per data frame (the moment the frame is complete),
 * `--json`/`--stream` bodies as received, a JSON answer pretty-printed once whole.
 */
async function printAnswer(
  result: { body: AsyncIterable<Uint8Array>; contentType?: string | undefined },
  values: Values,
  io: CliIO,
): Promise<void> {
  const decoder = new TextDecoder();
  const sse = !values.json && (result.contentType ?? '').startsWith('text/event-stream');
  const asReceived = values.json || values.stream;
  let pending = '';
  let whole = '';
  for await (const chunk of result.body) {
    const text = decoder.decode(chunk, { stream: true });
    if (sse) {
      const frames = (pending + text).split(/\r?\n\r?\n/);
      pending = frames.pop() ?? '';
      for (const data of frames.map(sseData)) if (data) io.stdout(`${data}\n`);
    } else if (asReceived) io.stdout(text);
    else whole += text;
  }
  if (sse && pending.trim()) io.stdout(`${pending.trim()}\n`);
  if (!sse && !asReceived) io.stdout(withNewline(prettyJson(whole)));
}

/** An SSE frame's data lines, joined. */
function sseData(frame: string): string {
  return frame
    .split(/\r?\n/)
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(5).trimStart())
    .join('\n');
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text; // not JSON: print as received
  }
}

const withNewline = (text: string) => (text.endsWith('\n') ? text : `${text}\n`);

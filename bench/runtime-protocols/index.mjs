// Benchmarks the protocol paths of the hosting runtime (@agentrt/runtime, from dist/ — build first):
//   - MCP tool call (official MCP SDK client, tools/call `add`) through the runtime's invocation URL
//     vs straight to the session worker's /mcp
//   - WebSocket round trip (`ws` client, one text frame echoed) through /runtimes/{arn}/ws vs
//     straight to the worker's /ws
// Both paths are measured in the same run, interleaved call by call; loopback only. Writes its
// table into docs/benchmarks.md (section runtime-protocols).
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRuntimeServer } from '@agentrt/runtime';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebSocket } from 'ws';
import { measure, overheadRows } from '../lib/measure.mjs';
import { table, writeSection } from '../lib/report.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = join(here, '..', '..', 'packages', 'runtime', 'test-fixtures');
const CALLS = Number(process.env.BENCH_MCP_CALLS ?? 300);
const ROUND_TRIPS = Number(process.env.BENCH_WS_ROUND_TRIPS ?? 1000);
const ROLE = 'arn:aws:iam::123456789012:role/Bench';

const dataDir = mkdtempSync(join(os.tmpdir(), 'agentrt-bench-protocols-'));
const server = await createRuntimeServer({
  port: 0,
  dataDir,
  logSink: () => undefined,
  stopGraceMs: 500,
  pingIntervalMs: 1000,
  // Workers on loopback ports, so the baseline can reach them without the runtime; the sandbox's
  // Unix-socket bridge would add its own hop to both paths alike.
  isolation: 'unsafe-process',
  // Round trips back to back exceed the hosted 250 frames/s limit, which would close the socket.
  wsMaxFramesPerSecond: 1_000_000,
});
const control = async (method, path, body) => {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return res.json();
};
async function createRuntime(name, fixture, serverProtocol) {
  const created = await control('PUT', '/runtimes/', {
    agentRuntimeName: `${name}_${Date.now()}`,
    agentRuntimeArtifact: {
      containerConfiguration: { containerUri: pathToFileURL(join(fixtures, fixture)).href },
    },
    roleArn: ROLE,
    protocolConfiguration: { serverProtocol },
  });
  for (;;) {
    const got = await control('GET', `/runtimes/${created.agentRuntimeId}/`);
    if (got.status === 'READY') return got.agentRuntimeArn;
    if (got.status.endsWith('FAILED')) throw new Error(got.failureReason);
    await new Promise((r) => setTimeout(r, 20));
  }
}
const loadBefore = os.loadavg()[0];
const started = performance.now();
const rows = [];

// Reference: a plain HTTP invoke (fetch, the same client stack as the MCP SDK's) of the echo agent,
// through the runtime vs straight to its worker.
const echoArn = await createRuntime('bench_http', 'echo', 'HTTP');
const echoSession = `bench-http-session-${process.pid}-${'0'.repeat(24)}`;
const post = (url, headers = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: '{"a":1}',
  }).then((r) => r.text());
const viaEcho = () =>
  post(`${server.url}/runtimes/${encodeURIComponent(echoArn)}/invocations`, {
    'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': echoSession,
  });
await viaEcho();
const echoPort = server.sessions().find((s) => s.sessionId === echoSession).worker.port;
const directEcho = () => post(`http://127.0.0.1:${echoPort}/invocations`);
const http = await measure({ via: viaEcho, direct: directEcho, n: CALLS, warmup: 50 });
rows.push(
  ...overheadRows(http, {
    direct: 'HTTP invoke (fetch): worker directly (baseline)',
    via: 'HTTP invoke (fetch): through the runtime',
    goalMs: 1,
    note: '(reference for the rows below)',
  }),
);

// The same invoke with a node:http client (keep-alive agent), as bench/runtime sends it: fetch's
// own per-request work is client cost, the same on both paths, but it widens the wall-clock gap.
const agent = new Agent({ keepAlive: true });
const nodePost = (port, path, headers = {}) =>
  new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', resolve);
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end('{"a":1}');
  });
const runtimePort = Number(new URL(server.url).port);
const nodeHttp = await measure({
  via: () =>
    nodePost(runtimePort, `/runtimes/${encodeURIComponent(echoArn)}/invocations`, {
      'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': echoSession,
    }),
  direct: () => nodePost(echoPort, '/invocations'),
  n: CALLS,
  warmup: 50,
});
rows.push(
  ...overheadRows(nodeHttp, {
    direct: 'HTTP invoke (node:http): worker directly (baseline)',
    via: 'HTTP invoke (node:http): through the runtime',
    goalMs: 1,
  }),
);

// MCP: one client through the runtime (its MCP session is the runtime session), one straight to
// that session's worker.
const mcpArn = await createRuntime('bench_mcp', 'mcp', 'MCP');
const viaTransport = new StreamableHTTPClientTransport(
  new URL(`${server.url}/runtimes/${encodeURIComponent(mcpArn)}/invocations?qualifier=DEFAULT`),
);
const via = new Client({ name: 'bench', version: '1' });
await via.connect(viaTransport);
const worker = server.sessions().find((s) => s.sessionId === viaTransport.sessionId).worker;
const direct = new Client({ name: 'bench', version: '1' });
await direct.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${worker.port}/mcp`)));
const call = (client) => client.callTool({ name: 'add', arguments: { a: 1, b: 2 } });
const mcp = await measure({ via: () => call(via), direct: () => call(direct), n: CALLS, warmup: 50 });
await via.close();
await direct.close();
rows.push(
  ...overheadRows(mcp, {
    direct: 'MCP tools/call: worker /mcp directly (baseline)',
    via: 'MCP tools/call: through the runtime invocation URL',
    goalMs: 1,
  }),
);

// WebSocket: one connection through the runtime, one straight to the same worker's /ws.
const wsArn = await createRuntime('bench_ws', 'ws-echo', 'HTTP');
const sessionId = `bench-ws-session-${process.pid}-${'0'.repeat(24)}`;
const open = (url, headers = {}) =>
  new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.once('open', () => socket.once('message', () => resolve(socket))); // the fixture's greeting
    socket.once('error', reject);
  });
const wsVia = await open(`${server.url.replace('http', 'ws')}/runtimes/${encodeURIComponent(wsArn)}/ws`, {
  'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': sessionId,
});
const wsWorker = server.sessions().find((s) => s.sessionId === sessionId).worker;
const wsDirect = await open(`ws://127.0.0.1:${wsWorker.port}/ws`);
const roundTrip = (socket) =>
  new Promise((resolve) => {
    socket.once('message', resolve);
    socket.send('ping-frame');
  });
const ws = await measure({
  via: () => roundTrip(wsVia),
  direct: () => roundTrip(wsDirect),
  n: ROUND_TRIPS,
  warmup: 100,
});
wsVia.close();
wsDirect.close();
rows.push(
  ...overheadRows(ws, {
    direct: 'WebSocket round trip: worker /ws directly (baseline)',
    via: 'WebSocket round trip: through /runtimes/{arn}/ws',
    goalMs: 1,
  }),
);

await server.close();
rmSync(dataDir, { recursive: true, force: true });

const markdown = `${table(['measure', 'p50', 'p95', 'ratio to baseline', 'note'], rows)}

One run on a shared 2-core machine (1-minute load average ${loadBefore.toFixed(1)} at the start,
${os.loadavg()[0].toFixed(1)} at the end): compare the ratios, not the absolute times. Each pair is
timed call by call in alternation (\`bench/lib/measure.mjs\`); "CPU +x µs/call" is this process's
CPU time per call through the runtime minus per direct call. The runtime runs in the benchmark's
process, so that difference is the runtime's own work per call (its HTTP server, its request to
the worker, the two extra loopback hops' syscalls), which the machine's load does not inflate the
way it inflates wall times.

Where the time goes (\`node --cpu-prof\` of 1,500 node:http invokes through the runtime, load ~10):
the runtime's own JavaScript per call is ~0.1 ms (SERVER span start ~37 µs, building the
worker's headers ~25 µs, routing and session lookup the rest); the remainder of the extra CPU is
Node's HTTP machinery of one more hop — parsing the caller's request, a second \`ClientRequest\` to
the worker, relaying the answer — and the loopback syscalls: a \`writev\` that wakes another
process costs ~0.3 ms here, and an extra hop has two more writes. No Nagle/delayed-ACK stall
(both sides set \`TCP_NODELAY\`: Node's server and Agent defaults), no buffering (answers are
relayed chunk by chunk), keep-alive to the worker is reused (\`worker.agent\`). So the MCP and HTTP
overheads share one floor, an extra Node HTTP hop, which on an idle machine measured +0.78 ms
(bench/runtime, node:http client) and on this loaded one is what the table shows; MCP routing
(the \`Mcp-Session-Id\` → session map) adds nothing measurable beyond it. fetch (undici, which the
MCP SDK uses) widens the wall-clock gap because its own per-request work runs on the same event
loop as the in-process runtime.
MCP: the official
MCP SDK client calling \`add\` on \`packages/runtime/test-fixtures/mcp\` (official MCP server SDK,
stateless, SSE answers), ${CALLS} calls per path interleaved one by one; through the runtime = the
invocation URL of an MCP runtime (session routing by Mcp-Session-Id, one extra loopback hop).
WebSocket: \`ws\` clients sending one text frame to \`test-fixtures/ws-echo\` and awaiting its echo,
${ROUND_TRIPS} round trips per path interleaved; through the runtime = \`/runtimes/{arn}/ws\`, which
relays each frame between two sockets (frame-rate limit raised for the run). Workers run as plain process groups (\`unsafe-process\`) so the baseline can reach their port.
Run: \`npx tsc -b packages/runtime && node bench/runtime-protocols/index.mjs\` (${((performance.now() - started) / 1000).toFixed(0)} s).`;
writeSection('runtime-protocols', 'Hosting runtime (@agentrt/runtime): MCP and WebSocket overhead', markdown);
console.log(markdown);

// An MCP server on the official MCP TypeScript SDK (Streamable HTTP at POST /mcp, no /ping, as the
// MCP container contract has none). MCP_MODE=stateful mints session ids; MCP_JSON=1 answers JSON
// instead of SSE. Tools: `add`, `count` (per-process counter: shows which worker answered) and
// `countdown` (progress notifications spaced in time: shows the stream is not buffered).
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const stateful = process.env.MCP_MODE === 'stateful';
const json = process.env.MCP_JSON === '1';
let count = 0;

function buildServer() {
  const server = new McpServer({ name: 'fixture-mcp', version: '1.0.0' });
  server.registerTool(
    'add',
    { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }),
  );
  server.registerTool('count', { description: 'Counts calls in this process' }, async () => ({
    content: [{ type: 'text', text: JSON.stringify({ count: ++count, pid: process.pid }) }],
  }));
  server.registerTool(
    'countdown',
    { description: 'Sends progress every delayMs', inputSchema: { steps: z.number(), delayMs: z.number() } },
    async ({ steps, delayMs }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        await new Promise((r) => setTimeout(r, delayMs));
        if (token !== undefined)
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: i, total: steps },
          });
      }
      return { content: [{ type: 'text', text: 'liftoff' }] };
    },
  );
  return server;
}

const transports = new Map();

async function readJson(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

createServer(async (req, res) => {
  if (!req.url?.startsWith('/mcp')) {
    res.writeHead(404).end();
    return;
  }
  const body = req.method === 'POST' ? await readJson(req) : undefined;
  if (!stateful) {
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: json,
    });
    const server = buildServer();
    res.on('close', () => void transport.close().then(() => server.close()));
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
    return;
  }
  const id = req.headers['mcp-session-id'];
  let transport = typeof id === 'string' ? transports.get(id) : undefined;
  if (!transport) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: json,
      onsessioninitialized: (sid) => transports.set(sid, transport),
    });
    await buildServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
}).listen(Number(process.env.PORT ?? 8000), '127.0.0.1');

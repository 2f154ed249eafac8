// One benchmark target per process, so the load generator never shares an event loop with it.
// Usage: node targets.mjs <agentrt|agentrt-traced|koa|node-http|bedrock-agentcore> [peerDir]
// Prints {"port":N} once listening. Every target reads the JSON body and answers {"ok":true}.
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { freePort } from '@agentrt/kit';

const kind = process.argv[2];
const peerDir = process.argv[3];
const reply = { ok: true };
const ready = (port) => process.stdout.write(`${JSON.stringify({ port })}\n`);

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

if (kind === 'agentrt' || kind === 'agentrt-traced') {
  if (kind === 'agentrt-traced') {
    // A registered SDK: context manager, tracer provider, batch processor, and an exporter that
    // drops the spans (the cost of sending them is the exporter's, not the server's).
    const { context, propagation, trace } = await import('@opentelemetry/api');
    const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
    const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
    const { createAgentPropagator } = await import('@agentrt/propagation');
    const exporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(createAgentPropagator());
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] }),
    );
  }
  const { createApp } = await import('@agentrt/server');
  const server = await createApp(() => reply).listen(0, '127.0.0.1');
  ready(server.address().port);
} else if (kind === 'koa') {
  const { default: Koa } = await import('koa');
  const app = new Koa();
  app.use(async (ctx) => {
    if (ctx.method === 'POST' && ctx.path === '/invocations') {
      await readJson(ctx.req);
      ctx.body = reply;
    } else ctx.status = 404;
  });
  const server = app.listen(0, '127.0.0.1', () => ready(server.address().port));
} else if (kind === 'node-http') {
  const server = createServer(async (req, res) => {
    if (req.method !== 'POST' || req.url !== '/invocations') {
      res.writeHead(404).end();
      return;
    }
    await readJson(req);
    const body = JSON.stringify(reply);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  server.listen(0, '127.0.0.1', () => ready(server.address().port));
} else if (kind === 'bedrock-agentcore') {
  const entry = join(peerDir, 'node_modules', 'bedrock-agentcore', 'dist', 'src', 'runtime', 'index.js');
  const { BedrockAgentCoreApp } = await import(pathToFileURL(entry).href);
  // Its run() takes a fixed port: find a free one first.
  const port = await freePort();
  const app = new BedrockAgentCoreApp({
    invocationHandler: { process: async () => reply },
    config: { logging: { enabled: false } },
  });
  app.run({ port, host: '127.0.0.1' }); // returns before Fastify is listening: poll the port
  for (let i = 0; ; i++) {
    const up = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (up) break;
    if (i > 200) throw new Error('bedrock-agentcore app did not start listening');
    await new Promise((r) => setTimeout(r, 50));
  }
  ready(port);
} else {
  process.stderr.write(`unknown target ${kind}\n`);
  process.exit(2);
}

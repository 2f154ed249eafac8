// An agent whose spans wait in memory for a batch, as an OpenTelemetry BatchSpanProcessor holds them
// until its schedule: one span per invocation, exported (OTLP/JSON) only on SIGTERM, before it exits
// — what an instrumented agent's shutdown flush does. Spans sent to a telemetry path that is gone
// are lost; the export's outcome goes to stderr.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

const pending = [];
const endpoint = (process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'http://127.0.0.1:4318').replace(/\/+$/, '');
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/ping') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ status: 'Healthy' }));
  }
  if (req.method === 'POST' && req.url === '/invocations') {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const { span } = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      const nowNs = String(BigInt(Date.now()) * 1_000_000n);
      pending.push({
        traceId: randomBytes(16).toString('hex'),
        spanId: randomBytes(8).toString('hex'),
        name: String(span ?? 'invocation'),
        kind: 2,
        startTimeUnixNano: nowNs,
        endTimeUnixNano: nowNs,
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ pending: pending.length }));
    });
    return;
  }
  res.writeHead(404).end();
});
server.listen(Number(process.env.PORT ?? 8080), '0.0.0.0');

process.on('SIGTERM', async () => {
  const body = JSON.stringify({
    resourceSpans: [
      { resource: { attributes: [] }, scopeSpans: [{ scope: { name: 'flush-on-stop' }, spans: pending }] },
    ],
  });
  try {
    const res = await fetch(`${endpoint}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(5000),
    });
    console.error(`flush-on-stop: exported ${pending.length} spans: HTTP ${res.status}`);
  } catch (error) {
    console.error(`flush-on-stop: export failed: ${error.message}`);
  }
  process.exit(0);
});

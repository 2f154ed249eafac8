// Stateful counter agent: keeps a count in memory AND in a file under its private TMPDIR, and
// reports what it can see (pid, visible processes, headers, env) so tests can check isolation.
import { createServer } from 'node:http';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

let count = 0;
const file = join(process.env.TMPDIR ?? '/tmp', 'counter.txt');
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/ping') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ status: 'Healthy', time_of_last_update: Math.floor(startedAt / 1000) }));
  }
  if (req.method === 'POST' && req.url === '/invocations') {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let input;
      try {
        input = JSON.parse(raw);
      } catch {
        input = {};
      }
      count++;
      console.log(`invocation ${count}`);
      // A structured logger's line (pino's shape): the runtime keeps its level, message and fields.
      console.error(JSON.stringify({ level: 40, time: Date.now(), msg: `count is ${count}`, count }));
      writeFileSync(file, String(count));
      let read;
      if (typeof input.read === 'string') {
        try {
          read = readFileSync(input.read, 'utf8');
        } catch (error) {
          read = `ERR:${error.code}`;
        }
      }
      const visiblePids = readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          count,
          fileCount: Number(readFileSync(file, 'utf8')),
          file,
          pid: process.pid,
          visiblePids,
          raw,
          read,
          headers: req.headers,
          env: {
            TMPDIR: process.env.TMPDIR,
            HOME: process.env.HOME,
            OTEL_RESOURCE_ATTRIBUTES: process.env.OTEL_RESOURCE_ATTRIBUTES,
            AGENT_GREETING: process.env.AGENT_GREETING,
            AWS_REGION: process.env.AWS_REGION,
            NODE_OPTIONS: process.env.NODE_OPTIONS,
            OTEL_EXPORTER_OTLP_ENDPOINT: process.env.OTEL_EXPORTER_OTLP_ENDPOINT,
          },
          version: process.env.AGENT_VERSION ?? 'unset',
        }),
      );
    });
    return;
  }
  res.writeHead(404).end();
});
const startedAt = Date.now();
// START_DELAY_MS: a slow boot (a pod that is not Ready for a while).
setTimeout(
  () =>
    server.listen(Number(process.env.PORT ?? 8080), '0.0.0.0', () =>
      console.log(`counter listening on ${process.env.PORT}`),
    ),
  Number(process.env.START_DELAY_MS ?? 0),
);
process.on('SIGTERM', () => server.close(() => process.exit(0)));

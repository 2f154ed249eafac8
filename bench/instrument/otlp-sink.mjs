// The OTLP/HTTP receiver of bench/instrument, in a process of its own as a collector would be (in
// the load generator's process it would take that event loop's time from the load). Answers every
// POST with an empty success in the request's encoding and counts what arrived, in all and per
// endpoint prefix (what comes before `/v1/`: each variant of a concurrent run exports to its own);
// `GET /stats` returns and resets the counts. Prints `READY {"port": N}` when listening.
import { createServer } from 'node:http';

let requests = 0;
let bytes = 0;
let byPrefix = {};
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ requests, bytes, byPrefix }));
    requests = bytes = 0;
    byPrefix = {};
    return;
  }
  const v1 = req.url.indexOf('/v1/');
  const prefix = v1 > 0 ? req.url.slice(1, v1) : '';
  const counts = (byPrefix[prefix] ??= { requests: 0, bytes: 0 });
  req.on('data', (chunk) => {
    bytes += chunk.length;
    counts.bytes += chunk.length;
  });
  req.on('end', () => {
    requests++;
    counts.requests++;
    const json = String(req.headers['content-type']).includes('json');
    res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
    res.end(json ? '{}' : '');
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`READY ${JSON.stringify({ port: server.address().port })}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));

// The OTLP/HTTP receiver of bench/instrument, in a process of its own as a collector would be (in
// the load generator's process it would take that event loop's time from the load). Answers every
// POST with an empty success in the request's encoding and counts what arrived;
// `GET /stats` returns and resets the counts. Prints `READY {"port": N}` when listening.
import { createServer } from 'node:http';

let requests = 0;
let bytes = 0;
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ requests, bytes }));
    requests = bytes = 0;
    return;
  }
  req.on('data', (chunk) => (bytes += chunk.length));
  req.on('end', () => {
    requests++;
    const json = String(req.headers['content-type']).includes('json');
    res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
    res.end(json ? '{}' : '');
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`READY ${JSON.stringify({ port: server.address().port })}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));

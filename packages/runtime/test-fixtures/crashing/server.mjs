// Crashing agent: {"crash": true} kills the process mid-invocation, {"fail": true} answers 500
// with an error body, anything else answers 200.
import { createServer } from 'node:http';

createServer((req, res) => {
  if (req.url === '/ping') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end('{"status":"Healthy"}');
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    if (input.crash) {
      console.error('crashing fixture: exiting on purpose');
      process.exit(3);
    }
    if (input.fail) {
      res.writeHead(500, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: 'tool exploded: weather API unreachable' }));
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ok: true, pid: process.pid }));
  });
}).listen(Number(process.env.PORT ?? 8080), '0.0.0.0');

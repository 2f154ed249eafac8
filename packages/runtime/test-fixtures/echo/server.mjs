// Minimal agent: /ping and an /invocations that echoes the payload. The benchmark's worker.
import { createServer } from 'node:http';

createServer((req, res) => {
  if (req.url === '/ping') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end('{"status":"Healthy"}');
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  });
}).listen(Number(process.env.PORT ?? 8080), '0.0.0.0');

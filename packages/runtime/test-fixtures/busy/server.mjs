// HealthyBusy agent: reports background work in /ping with a fixed time_of_last_update (ISO form,
// like the TypeScript SDK), so only the HealthyBusy status keeps it alive past the idle timeout.
import { createServer } from 'node:http';

const since = new Date().toISOString();
createServer((req, res) => {
  if (req.url === '/ping') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ status: 'HealthyBusy', time_of_last_update: since }));
  }
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ busy: true, pid: process.pid }));
  });
}).listen(Number(process.env.PORT ?? 8080), '0.0.0.0');

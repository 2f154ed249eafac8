// Slow-start agent: waits START_DELAY_MS before listening; with CRASH_ON_START=1 it prints an
// error and exits instead, as a broken import would.
import { createServer } from 'node:http';

console.log(`slow-start: warming up for ${process.env.START_DELAY_MS ?? 0} ms`);
if (process.env.CRASH_ON_START === '1') {
  console.error('slow-start: Error: Cannot find module "missing-dependency"');
  process.exit(1);
}
setTimeout(
  () => {
    createServer((req, res) => {
      if (req.url === '/ping') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end('{"status":"Healthy"}');
      }
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"started":true}');
      });
    }).listen(Number(process.env.PORT ?? 8080), '0.0.0.0');
  },
  Number(process.env.START_DELAY_MS ?? 0),
);

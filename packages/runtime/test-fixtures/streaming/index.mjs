// Streaming agent: answers /invocations with SSE frames written FRAME_DELAY_MS apart.
import { createServer } from 'node:http';

const frames = Number(process.env.FRAMES ?? 5);
const delayMs = Number(process.env.FRAME_DELAY_MS ?? 150);
createServer((req, res) => {
  if (req.url === '/ping') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end('{"status":"Healthy"}');
  }
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let i = 0;
    const tick = () => {
      res.write(`data: ${JSON.stringify({ i, at: Date.now() })}\n\n`);
      if (++i < frames) setTimeout(tick, delayMs);
      else res.end();
    };
    tick();
  });
}).listen(Number(process.env.PORT ?? 8080), '0.0.0.0');

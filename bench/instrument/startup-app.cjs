// A small Koa app: listen, report time-to-ready inputs and RSS, exit. Used by bench/instrument.
const Koa = require('koa');
const app = new Koa();
app.use((ctx) => {
  ctx.body = 'ok';
});
const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`READY ${JSON.stringify({ rss: process.memoryUsage().rss })}\n`);
  server.close();
  // exit explicitly: a telemetry SDK may keep timers alive
  process.exit(0);
});

// A small Koa app for bench/instrument: listen, report RSS when ready and again 300 ms later (work
// a launcher defers past start-up shows up there), then exit.
const Koa = require('koa');
const app = new Koa();
app.use((ctx) => {
  ctx.body = 'ok';
});
const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`READY ${JSON.stringify({ rss: process.memoryUsage().rss })}\n`);
  setTimeout(() => {
    process.stdout.write(`SETTLED ${JSON.stringify({ rss: process.memoryUsage().rss })}\n`);
    server.close();
    // exit explicitly: a telemetry SDK may keep timers alive
    process.exit(0);
  }, 300);
});

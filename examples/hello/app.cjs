// The CommonJS twin of app.mjs: one request to itself (a CLIENT and a SERVER span in one trace) and
// one console line (a log record).
// node --require @agentrt/instrument examples/hello/app.cjs
const { createServer } = require('node:http');

const server = createServer((req, res) => res.end(`hello from ${req.url}\n`));
server.listen(0, '127.0.0.1', async () => {
  const url = `http://127.0.0.1:${server.address().port}/hello`;
  const answer = await fetch(url).then((res) => res.text());
  console.log(`hello: GET ${url} → ${answer.trim()}`);
  server.close();
});

// The smallest app to try the launcher on (README "Instrument your own agent"): it serves one
// request to itself — an outgoing HTTP call (a CLIENT span) answered by its own server (a SERVER
// span in the same trace) — and writes one console line (an OTLP log record), then exits.
// node --import @agentrt/instrument examples/hello/app.mjs
import { createServer } from 'node:http';

const server = createServer((req, res) => res.end(`hello from ${req.url}\n`));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/hello`;
const answer = await fetch(url).then((res) => res.text());
console.log(`hello: GET ${url} → ${answer.trim()}`);
server.close();

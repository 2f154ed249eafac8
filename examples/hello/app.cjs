// The CommonJS twin of app.mjs: one outgoing HTTP call (a CLIENT span) and one console line (a log record).
// node --require @agentrt/instrument examples/hello/app.cjs
const target = process.env.HELLO_URL ?? 'http://127.0.0.1:4318/healthz';
fetch(target).then(
  (res) => console.log(`hello: GET ${target} → ${res.status}`),
  (error) => console.log(`hello: GET ${target} → unreachable (${error.cause?.code ?? error.message})`),
);

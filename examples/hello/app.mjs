// The smallest app to try the launcher on (README "Instrument your own agent"): one outgoing HTTP
// call, which becomes a CLIENT span, and one console line, which becomes an OTLP log record.
// node --import @agentrt/instrument examples/hello/app.mjs
const target = process.env.HELLO_URL ?? 'http://127.0.0.1:4318/healthz';
const status = await fetch(target).then(
  (res) => res.status,
  (error) => `unreachable (${error.cause?.code ?? error.message})`,
);
console.log(`hello: GET ${target} → ${status}`);

// bench/instrument/serializer.mjs: the cost of encoding spans as OTLP protobuf on the app's main
// thread, upstream's ProtobufTraceSerializer (@opentelemetry/otlp-transformer) against our
// serializeTraceRequest (packages/instrument/src/otlp). Batches of 512 HTTP server spans as the
// BatchSpanProcessor hands them over, 13 attributes each: once as a server's spans are (most values
// repeat from span to span), once with every string value unique. Run after building:
// `node bench/instrument/serializer.mjs`. Prints µs per span for each and their ratio.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dist = join(root, 'packages', 'instrument', 'dist', 'otlp', 'trace-serializer.js');
if (!existsSync(dist)) {
  console.error('packages/instrument/dist is missing: run `npx tsc -b packages/instrument` first');
  process.exit(1);
}
const { serializeTraceRequest } = await import(dist);
const require = createRequire(join(root, 'packages', 'instrument', 'package.json'));
const { ProtobufTraceSerializer } = require('@opentelemetry/otlp-transformer');
const {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} = require('@opentelemetry/sdk-trace-base');
const { resourceFromAttributes } = require('@opentelemetry/resources');
const { SpanKind } = require('@opentelemetry/api');

const BATCH = 512;
const BATCHES = 40; // ~20k spans: more than the CPU caches hold, as in an app
const ROUNDS = Number(process.env.BENCH_SERIALIZER_ROUNDS ?? 5);

const memory = new InMemorySpanExporter();
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({
    'service.name': 'contract-app',
    'deployment.environment.name': 'development',
    'telemetry.distro.name': '@agentrt/instrument',
    'telemetry.distro.version': '0.1.0',
    'host.name': 'vm',
    'host.arch': 'amd64',
    'process.pid': 4242,
    'process.executable.name': 'node',
    'process.command_args': ['/usr/bin/node', '--import', '@agentrt/instrument', 'app.mjs'],
    'process.runtime.version': '24.0.0',
    'process.runtime.name': 'nodejs',
    'telemetry.sdk.language': 'nodejs',
    'telemetry.sdk.name': 'opentelemetry',
    'telemetry.sdk.version': '2.12.1',
  }),
  spanProcessors: [new SimpleSpanProcessor(memory)],
});
const tracer = provider.getTracer('@opentelemetry/instrumentation-http', '0.223.0');

let serial = 0;
/** A batch of HTTP server spans; `unique` gives every string attribute a value of its own. */
function makeBatch(unique) {
  memory.reset();
  for (let i = 0; i < BATCH; i++) {
    const n = serial++;
    const u = unique ? `-${n}` : '';
    const span = tracer.startSpan(`POST /invocations${u}`, {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': 'POST',
        'url.scheme': 'http',
        'url.path': `/invocations${u}`,
        'server.address': `127.0.0.1${u}`,
        'server.port': 8080,
        'network.protocol.version': '1.1',
        'network.peer.address': `127.0.0.1${u}`,
        'network.peer.port': 40000 + (n % 1000),
        'client.address': `127.0.0.1${u}`,
        'user_agent.original': `Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)${u}`,
        'session.id': `bench-session-${String(n >> 4).padStart(22, '0')}`,
        'http.route': `/invocations${u}`,
      },
    });
    span.setAttribute('http.response.status_code', 200);
    span.end();
  }
  return memory.getFinishedSpans().slice();
}

const upstream = (spans) => ProtobufTraceSerializer.serializeRequest(spans);

/** Best-of-ROUNDS µs per span of `serialize` over every batch. */
function measure(serialize, batches) {
  for (const b of batches.slice(0, 10)) serialize(b); // warm up
  let best = Infinity;
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = process.hrtime.bigint();
    for (const b of batches) serialize(b);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1000 / (batches.length * BATCH));
  }
  return best;
}

for (const [label, unique] of [
  ['server spans (method, route, addresses repeat)', false],
  ['every string attribute unique', true],
]) {
  const batches = Array.from({ length: BATCHES }, () => makeBatch(unique));
  for (const b of batches) {
    if (!Buffer.from(upstream(b)).equals(Buffer.from(serializeTraceRequest(b)))) {
      console.error('the two serializers disagree on a batch');
      process.exit(1);
    }
  }
  const bytes = serializeTraceRequest(batches[0]).length;
  const up = measure(upstream, batches);
  const ours = measure(serializeTraceRequest, batches);
  console.log(`${label}: batches of ${BATCH} spans, ${Math.round(bytes / BATCH)} bytes a span`);
  console.log(`  upstream ProtobufTraceSerializer  ${up.toFixed(3)} µs/span`);
  console.log(`  serializeTraceRequest             ${ours.toFixed(3)} µs/span`);
  console.log(`  ratio upstream / ours             ${(up / ours).toFixed(1)}x`);
}

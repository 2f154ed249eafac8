// The trace list hides health probes, synthetic checks and the stack's own traffic by default, and
// lists them on request (`noise=include`, or `noise=only`): the same answers from the SQLite and the
// ClickHouse store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ClickHouseHarness,
  clickHouseSkipReason,
  startClickHouse,
} from '../store/clickhouse/clickhouse-harness.test-util.js';
import { hex, jsonRequest, jsonSpan, postJson, startCollector } from '../testing.test-util.js';
import type { TraceListResponse } from '../wire-types.js';

const NOW = Date.now() - 60_000;
const SERVER = 2;
const CLIENT = 3;

/** One single-span trace: id n, the given service, name, kind, attributes and resource extras. */
function trace(
  n: number,
  service: string,
  name: string,
  attributes: Record<string, string | number> = {},
  kind = SERVER,
  resource: Record<string, string> = {},
) {
  const body = jsonRequest(service, [
    jsonSpan({
      traceId: hex(n, 16),
      spanId: hex(n, 8),
      name,
      kind,
      startMs: NOW + n,
      durationMs: 2,
      attributes,
    }),
  ]) as { resourceSpans: { resource: { attributes: unknown[] } }[] };
  for (const [key, value] of Object.entries(resource))
    body.resourceSpans[0]!.resource.attributes.push({ key, value: { stringValue: value } });
  return body;
}

describe.each([
  { store: 'sqlite', skip: undefined },
  { store: 'clickhouse', skip: clickHouseSkipReason },
])('trace list noise filter ($store store)', { timeout: 60_000 }, ({ store, skip }) => {
  let c: Awaited<ReturnType<typeof startCollector>>;
  let ch: ClickHouseHarness | undefined;
  const list = async (query = '') => {
    const res = await fetch(`${c.url}/api/traces${query}`);
    expect(res.status).toBe(200);
    return ((await res.json()) as TraceListResponse).traces.map((t) => [t.rootName, t.noise ?? null]);
  };

  beforeAll(async () => {
    if (skip) return;
    if (store === 'clickhouse') {
      ch = await startClickHouse();
      c = await startCollector({
        store: `clickhouse://default:@127.0.0.1:${ch.nodes[0]!.httpPort}/agentrt_noise`,
        summaryRefreshIntervalMs: 0,
      });
    } else c = await startCollector();
    const bodies = [
      trace(1, 'weather', 'POST /weather', { 'http.request.method': 'POST', 'http.route': '/weather' }),
      trace(2, 'weather', 'GET /healthz', { 'http.request.method': 'GET', 'url.path': '/healthz' }),
      trace(3, 'sdk-agent', 'GET', { 'http.request.method': 'GET', 'url.path': '/ping' }),
      trace(4, 'agentrt-doctor', 'agentrt doctor round trip', {}, 1, { 'agentrt.synthetic': 'doctor' }),
      // An older CLI's doctor span: no marker, only its service name.
      trace(5, 'agentrt-doctor', 'agentrt doctor round trip', { 'agentrt.doctor': 'true' }, 1),
      trace(6, 'agentrt-collector', 'GET /api/traces', {
        'http.request.method': 'GET',
        'url.path': '/api/traces',
      }),
      trace(
        7,
        'weather',
        'POST',
        { 'http.request.method': 'POST', 'url.full': 'http://127.0.0.1:4318/v1/traces' },
        CLIENT,
      ),
      // A user's own GET on a path that only looks alike is not a probe.
      trace(8, 'weather', 'GET /weather/healthz', {
        'http.request.method': 'GET',
        'http.route': '/weather/healthz',
      }),
    ];
    for (const body of bodies) expect((await postJson(`${c.url}/v1/traces`, body)).status).toBe(200);
  });
  afterAll(async () => {
    await c?.cleanup();
    await ch?.stop();
  });

  it.skipIf(skip)('hides probes, synthetic checks and internal traffic by default', async () => {
    expect(await list()).toEqual([
      ['GET /weather/healthz', null],
      ['POST /weather', null],
    ]);
  });

  it.skipIf(skip)(
    'lists them with noise=include, marked by kind, and only them with noise=only',
    async () => {
      expect(await list('?noise=include')).toEqual([
        ['GET /weather/healthz', null],
        ['POST', 'internal'],
        ['GET /api/traces', 'internal'],
        ['agentrt doctor round trip', 'synthetic'],
        ['agentrt doctor round trip', 'synthetic'],
        ['GET', 'probe'],
        ['GET /healthz', 'probe'],
        ['POST /weather', null],
      ]);
      expect((await list('?noise=only')).map(([, noise]) => noise)).not.toContain(null);
      expect(await list('?noise=only')).toHaveLength(6);
    },
  );

  it.skipIf(skip)(
    'combines with the other filters, and a trace looked up by id is listed whatever it is',
    async () => {
      expect(await list('?service=weather&noise=include&status=ok')).toHaveLength(4);
      expect(await list(`?q=${hex(2, 16)}`)).toEqual([['GET /healthz', 'probe']]);
      // A limit smaller than the run of noise between the user's traces still fills up with theirs.
      expect(await list('?limit=2')).toEqual([
        ['GET /weather/healthz', null],
        ['POST /weather', null],
      ]);
      expect(await list('?limit=1&noise=only')).toEqual([['POST', 'internal']]);
    },
  );

  it.skipIf(skip)('lists the traces that started in a time window (a chart point bucket)', async () => {
    // Trace n started at NOW + n ms (edges between traces: stored nanoseconds are doubles).
    const window = await list(`?noise=include&startMs=${NOW + 1.5}&endMs=${NOW + 4.5}`);
    expect(window.map(([name]) => name)).toEqual(['agentrt doctor round trip', 'GET', 'GET /healthz']);
    expect(await list(`?startMs=${NOW + 8.5}`)).toEqual([]);
    expect((await fetch(`${c.url}/api/traces?endMs=soon`)).status).toBe(400);
  });

  it.skipIf(skip)('rejects an unknown noise setting with 400 naming the parameter', async () => {
    const res = await fetch(`${c.url}/api/traces?noise=maybe`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toMatch(/noise must be/);
  });
});

import { describe, expect, it } from 'vitest';
import { parseRoute, routeHref, type Route } from './router.js';

describe('hash routes', () => {
  it('round-trips every view', () => {
    const routes: Route[] = [
      { view: 'sessions' },
      { view: 'session', sessionId: 'sess 1/ä' },
      { view: 'traces', filters: { service: 'weather', status: 'error', minDurationMs: 250, q: 'paris' } },
      { view: 'traces', filters: {} },
      {
        view: 'traces',
        filters: {
          service: 'agentrt-runtime',
          status: 'error',
          startMs: 1_700_000_000_000,
          endMs: 1_700_000_060_000,
        },
      },
      { view: 'traces', filters: { noise: 'include' } },
      { view: 'trace', traceId: 'abc', spanId: 'def' },
      { view: 'trace', traceId: 'abc' },
      {
        view: 'trace',
        traceId: 'abc',
        filter: 'x=1',
        depth: 2,
        fold: ['00000000000000a1', '00000000000000b2'],
      },
      { view: 'search', query: 'filter durationNano > 1e9 | limit 5' },
      { view: 'compare', a: 'x', b: 'y' },
      { view: 'live' },
      { view: 'inspector' },
      { view: 'inspector', host: 'http://127.0.0.1:8787', runtime: 'arn:aws:x/sdk_agent' },
      { view: 'agents' },
      { view: 'logs' },
      { view: 'logs', sessionId: 's 1', traceId: 'abc', service: 'agentrt-runtime' },
      { view: 'logs', severity: 'warn', q: 'session started' },
      { view: 'evals' },
      { view: 'eval-run', runId: 'eval-1/x' },
      { view: 'eval-compare', base: 'eval-a&b', run: 'eval-c d' },
    ];
    for (const r of routes) expect(parseRoute(routeHref(r))).toEqual(r);
  });
  it('falls back to the Agents view and ignores junk parameters', () => {
    expect(parseRoute('')).toEqual({ view: 'agents' });
    expect(parseRoute('#/nope')).toEqual({ view: 'agents' });
    expect(parseRoute('#/eval-compare?base=only-one')).toEqual({ view: 'evals' });
    expect(parseRoute('#/traces?status=weird&minDurationMs=abc')).toEqual({ view: 'traces', filters: {} });
    expect(parseRoute('#/sessions/%E0%A4%A')).toEqual({ view: 'session', sessionId: '%E0%A4%A' });
    expect(parseRoute('#/traces/abc?depth=-1&fold=<script>,00000000000000a1,zz')).toEqual({
      view: 'trace',
      traceId: 'abc',
      fold: ['00000000000000a1'],
    });
    expect(parseRoute('#/traces/abc?depth=1.5')).toEqual({ view: 'trace', traceId: 'abc' });
    expect(parseRoute('#/traces/abc?depth=0')).toEqual({ view: 'trace', traceId: 'abc', depth: 0 });
  });
});

// End to end: the official AWS SDK invokes an instrumented reference agent through the runtime; the
// collector then holds one trace caller → runtime → agent, the runtime's AgentCore metrics, the
// session's usage and the runtime's logs with trace ids.
import type { MetricQueryResult, TraceResponse } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RuntimeStack, startRuntimeStack, until } from './runtime-stack.js';

const SESSION = `must-show-session-${'0'.repeat(24)}`;
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

describe('must show: the runtime observes itself end to end (AWS SDK → runtime → agent → collector)', () => {
  let stack: RuntimeStack;
  let collector: RuntimeStack['collector'];

  beforeAll(async () => {
    stack = await startRuntimeStack({ name: 'must_show', runtime: { pingIntervalMs: 500 } });
    ({ collector } = stack);
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
  }, 30_000);

  const metric = async (params: Record<string, string | string[]>) => {
    const search = new URLSearchParams({ since: '1h', stepMs: '3600000' });
    for (const [k, v] of Object.entries(params)) for (const x of [v].flat()) search.append(k, x);
    const res = await fetch(`${collector.url}/api/metrics/query?${search}`);
    return res.ok ? ((await res.json()) as MetricQueryResult) : undefined;
  };
  const total = (r: MetricQueryResult | undefined) =>
    r?.series.flatMap((s) => s.points).reduce((n, [, v]) => n + (v ?? 0), 0);

  it('one trace from the caller through the runtime span to the agent, metrics, usage and logs', async () => {
    const calls = 3;
    for (let i = 0; i < calls; i++) {
      const out = await stack.invoke(JSON.stringify({ prompt: `hello ${i}` }), SESSION, {
        traceParent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
      });
      expect(out.statusCode).toBe(200);
    }
    // A payload the agent refuses (400) reaches the caller as the runtime's 424: a user error.
    await expect(stack.invoke('{not json', SESSION)).rejects.toMatchObject({ name: 'RuntimeClientError' });

    // The trace: the caller's trace continued by the runtime's SERVER span, the agent's spans below it.
    const trace = await until('the trace with runtime and agent spans', async () => {
      const res = await fetch(`${collector.url}/api/traces/${CALLER_TRACE}`);
      if (!res.ok) return undefined;
      const t = (await res.json()) as TraceResponse;
      const services = new Set<string>();
      const walk = (nodes: TraceResponse['roots']): void => {
        for (const n of nodes) {
          services.add(String(n.span.resource.attributes['service.name']));
          walk(n.children);
        }
      };
      walk(t.roots);
      return services.has('sdk-agent') && t.summary.spanCount >= 3 * calls ? t : undefined;
    });
    const invocations = trace.roots.filter((r) => r.span.name === 'InvokeAgentRuntime');
    expect(invocations).toHaveLength(calls);
    expect(trace.roots).toHaveLength(calls); // nothing else is a root: every agent span hangs below
    expect(trace.summary.inProgress).toBe(false); // its parent (the caller) is upstream, not missing
    for (const root of invocations) {
      expect(root.span.resource.attributes['service.name']).toBe('agentrt-runtime');
      expect(root.span.parentSpanId).toBe(CALLER_SPAN);
      expect(root.span.attributes['session.id']).toBe(SESSION);
      const agentChildren = root.children.filter(
        (c) => c.span.resource.attributes['service.name'] === 'sdk-agent',
      );
      expect(agentChildren.length).toBeGreaterThan(0);
      // Server spans carry their route: the runtime's (named by its AWS operation) and the agent's
      // contract route, named `METHOD route` as the HTTP conventions say.
      expect(root.span.attributes['http.route']).toBe('/runtimes/:runtime/invocations');
      expect(
        agentChildren.map((c) => [c.span.kind, c.span.name, c.span.attributes['http.route']]),
      ).toContainEqual(['SERVER', 'POST /invocations', '/invocations']);
    }

    // AgentCore metrics: Invocations equals the calls made, Latency percentiles, errors by kind.
    const name = ['Name=must_show::DEFAULT', 'Operation=InvokeAgentRuntime'];
    const invoked = await until('Invocations = 4', async () => {
      const n = total(await metric({ name: 'Invocations', fn: 'sum', where: name }));
      return n === calls + 1 ? n : undefined;
    });
    expect(invoked).toBe(calls + 1);
    expect(total(await metric({ name: 'UserErrors', fn: 'sum', where: name }))).toBe(1);
    expect(total(await metric({ name: 'SystemErrors', fn: 'sum', where: name }))).toBe(0);
    expect(total(await metric({ name: 'TotalErrors', fn: 'sum', where: name }))).toBe(1);
    expect(total(await metric({ name: 'Latency', fn: 'count', where: name }))).toBe(calls + 1);
    const p50 = total(await metric({ name: 'Latency', fn: 'p50', where: name }))!;
    const p99 = total(await metric({ name: 'Latency', fn: 'p99', where: name }))!;
    expect(p50).toBeGreaterThan(0);
    expect(p99).toBeGreaterThanOrEqual(p50);
    expect(total(await metric({ name: 'SessionCount', fn: 'sum', where: name }))).toBe(1);

    // Usage of the session (CPU time and memory of its worker).
    const cpu = await until('session CPU seconds', async () => {
      const r = await metric({
        name: 'agent.runtime.vcpu.seconds.used',
        fn: 'max',
        where: `session.id=${SESSION}`,
      });
      const v = total(r);
      return v && v > 0 ? v : undefined;
    });
    expect(cpu).toBeGreaterThan(0);
    const memory = await metric({
      name: 'agent.runtime.memory.used',
      fn: 'max',
      where: `session.id=${SESSION}`,
    });
    expect(total(memory)).toBeGreaterThan(1_000_000);

    // The runtime's logs for the session carry the invocation's trace id.
    const logs = await until('runtime logs with trace ids', async () => {
      const res = await fetch(
        `${collector.url}/api/logs?service=agentrt-runtime&sessionId=${encodeURIComponent(SESSION)}&limit=500`,
      );
      const body = (await res.json()) as { logs: { traceId?: string; body: unknown }[] };
      return body.logs.some((l) => l.traceId === CALLER_TRACE) ? body.logs : undefined;
    });
    expect(logs.filter((l) => l.traceId === CALLER_TRACE).length).toBeGreaterThan(0);
  }, 90_000);
});

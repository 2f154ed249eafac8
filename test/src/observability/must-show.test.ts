// End to end: the official AWS SDK invokes an instrumented reference agent through the runtime; the
// collector then holds one trace caller → runtime → agent, the runtime's AgentCore metrics, the
// session's usage and the runtime's logs with trace ids.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BedrockAgentCoreClient, InvokeAgentRuntimeCommand } from '@aws-sdk/client-bedrock-agentcore';
import {
  BedrockAgentCoreControlClient,
  CreateAgentRuntimeCommand,
  GetAgentRuntimeCommand,
} from '@aws-sdk/client-bedrock-agentcore-control';
import {
  type Collector,
  type MetricQueryResult,
  type TraceResponse,
  createCollector,
} from '@agentrt/collector';
import { type RuntimeServer, createRuntimeServer } from '@agentrt/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repoRoot = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..');
const SESSION = `must-show-session-${'0'.repeat(24)}`;
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('must show: the runtime observes itself end to end (AWS SDK → runtime → agent → collector)', () => {
  let dir: string;
  let collector: Collector;
  let runtime: RuntimeServer;
  let control: BedrockAgentCoreControlClient;
  let data: BedrockAgentCoreClient;
  let arn: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(os.tmpdir(), 'agentrt-must-show-'));
    collector = await createCollector({ dataDir: join(dir, 'collector'), host: '127.0.0.1', port: 0 });
    runtime = await createRuntimeServer({
      host: '127.0.0.1',
      port: 0,
      dataDir: join(dir, 'runtime'),
      otlpEndpoint: collector.url,
      instrumentWorkers: true,
      metricExportIntervalMs: 500,
      pingIntervalMs: 500,
      logSink: () => undefined,
    });
    const common = {
      endpoint: runtime.url,
      region: 'us-east-1',
      credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' },
    };
    control = new BedrockAgentCoreControlClient(common);
    data = new BedrockAgentCoreClient({ ...common, maxAttempts: 1 });
    const created = await control.send(
      new CreateAgentRuntimeCommand({
        agentRuntimeName: 'must_show',
        agentRuntimeArtifact: {
          containerConfiguration: { containerUri: pathToFileURL(join(repoRoot, 'examples/sdk-agent')).href },
        },
        roleArn: 'arn:aws:iam::123456789012:role/AgentRuntimeRole',
        networkConfiguration: { networkMode: 'PUBLIC' },
        environmentVariables: { AGENTRT_MODEL_PROVIDER: 'offline', OTEL_SERVICE_NAME: 'sdk-agent' },
      }),
    );
    arn = created.agentRuntimeArn!;
    await until('runtime READY', async () => {
      const got = await control.send(new GetAgentRuntimeCommand({ agentRuntimeId: created.agentRuntimeId! }));
      return got.status === 'READY' ? true : undefined;
    });
  }, 60_000);
  afterAll(async () => {
    control?.destroy();
    data?.destroy();
    await runtime?.close();
    await collector?.close();
    rmSync(dir, { recursive: true, force: true });
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
      const out = await data.send(
        new InvokeAgentRuntimeCommand({
          agentRuntimeArn: arn,
          runtimeSessionId: SESSION,
          contentType: 'application/json',
          traceParent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
          payload: new TextEncoder().encode(JSON.stringify({ prompt: `hello ${i}` })),
        }),
      );
      expect(out.statusCode).toBe(200);
      await out.response!.transformToString();
    }
    // A payload the agent refuses (400) reaches the caller as the runtime's 424: a user error.
    await expect(
      data.send(
        new InvokeAgentRuntimeCommand({
          agentRuntimeArn: arn,
          runtimeSessionId: SESSION,
          contentType: 'application/json',
          payload: new TextEncoder().encode('{not json'),
        }),
      ),
    ).rejects.toMatchObject({ name: 'RuntimeClientError' });

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

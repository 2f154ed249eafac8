// A session stopped right after an invocation keeps its worker's last spans: StopRuntimeSession
// (official AWS SDK) lets the worker flush its exporters, and the runtime passes on what the worker
// sent while it stopped, before it closes the session's telemetry path. Counted in the collector
// against a session left to flush on its own, for each isolation mode this machine has, and for the
// agent's image on podman + runc (the container stopped with `podman stop`).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { StopRuntimeSessionCommand } from '@aws-sdk/client-bedrock-agentcore';
import type { TraceResponse } from '@agentrt/collector';
import { detectIsolation } from '@agentrt/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, type RuntimeStack, startRuntimeStack, until } from './runtime-stack.js';

const SESSION_LEFT = `stop-flush-left-${'0'.repeat(24)}`;
const SESSION_STOPPED = `stop-flush-stop-${'0'.repeat(24)}`;
const TRACE_LEFT = '5a0f0e7d1c2b3a4958677685a4b3c2d1';
const TRACE_STOPPED = '6b1f1e8d2c3b4a5969788796b5c4d3e2';
const CALLER_SPAN = '00f067aa0ba902b7';
const GRACE_MS = 10_000;

/** The agent's own spans (service sdk-agent) in the trace, 0 while the collector has none. */
async function agentSpans(stack: RuntimeStack, traceId: string): Promise<number> {
  const res = await fetch(`${stack.collector.url}/api/traces/${traceId}`);
  if (!res.ok) return 0;
  const trace = (await res.json()) as TraceResponse;
  let count = 0;
  const walk = (nodes: TraceResponse['roots']): void => {
    for (const n of nodes) {
      if (n.span.resource.attributes['service.name'] === 'sdk-agent') count++;
      walk(n.children);
    }
  };
  walk(trace.roots);
  return count;
}

/** The count once it has not changed for `quietMs` (spans of one export arrive together). */
async function settled(stack: RuntimeStack, traceId: string, quietMs: number): Promise<number> {
  let last = -1;
  let since = Date.now();
  for (;;) {
    const now = await agentSpans(stack, traceId);
    if (now !== last) [last, since] = [now, Date.now()];
    else if (now > 0 && Date.now() - since >= quietMs) return now;
    await new Promise((r) => setTimeout(r, 250));
  }
}

const bwrap = detectIsolation({ setting: 'auto', sandboxIds: { uid: 65534, gid: 65534 } }).mode === 'bwrap';
/** The sdk-agent's image (scripts/build-example-images.sh) for podman + runc: rootful podman only. */
const podman = process.getuid?.() === 0 && bwrap && spawnSync('podman', ['--version']).status === 0;
const IMAGE = 'localhost/agentrt/sdk-agent:latest';
const modes = (['unsafe-process', 'bwrap', 'podman'] as const).filter(
  (mode) => mode === 'unsafe-process' || (mode === 'bwrap' ? bwrap : podman),
);
if (!podman) console.warn('stop-flush: podman + runc skipped (needs root, podman and the bwrap sandbox)');

/** The stack of a mode: the example's directory in a process or the bwrap sandbox, or its image on podman. */
function stackOptions(mode: (typeof modes)[number]): Parameters<typeof startRuntimeStack>[0] {
  // Long enough that a stop always comes before the agent's own scheduled export.
  const environment = {
    AGENTRT_MODEL_PROVIDER: 'offline',
    OTEL_SERVICE_NAME: 'sdk-agent',
    OTEL_BSP_SCHEDULE_DELAY: '8000',
  };
  if (mode !== 'podman')
    // Short: a sandbox's socket paths under the stack's temp dir must fit in 107 bytes.
    return {
      name: mode === 'bwrap' ? 'sf_bwrap' : 'sf_proc',
      environment,
      runtime: { isolation: mode, stopGraceMs: GRACE_MS },
    };
  const built = spawnSync('sh', [join(REPO_ROOT, 'scripts', 'build-example-images.sh'), 'sdk-agent'], {
    encoding: 'utf8',
    timeout: 280_000,
  });
  if (built.status !== 0) throw new Error(`build-example-images.sh: ${built.stderr}`);
  return {
    name: 'sf_podman',
    containerUri: IMAGE,
    environment,
    runtime: { containerEngine: 'podman', ociRuntime: 'runc', stopGraceMs: GRACE_MS },
  };
}

describe.each(modes)('StopRuntimeSession right after an invocation (isolation %s)', (isolation) => {
  let stack: RuntimeStack;
  beforeAll(async () => {
    stack = await startRuntimeStack(stackOptions(isolation));
  }, 300_000);
  afterAll(() => stack?.close(), 30_000);

  const invoke = (sessionId: string, traceId: string) =>
    stack.invoke(JSON.stringify({ prompt: 'weather in Paris' }), sessionId, {
      traceParent: `00-${traceId}-${CALLER_SPAN}-01`,
    });

  it('the collector gets every span the agent made, as many as a session left to flush', async () => {
    // Baseline: a session left running exports on the agent's schedule.
    expect((await invoke(SESSION_LEFT, TRACE_LEFT)).statusCode).toBe(200);
    const expected = await until(
      'the left session’s spans',
      async () => ((await agentSpans(stack, TRACE_LEFT)) > 0 ? settled(stack, TRACE_LEFT, 2000) : undefined),
      60_000,
    );
    expect(expected).toBeGreaterThan(0);

    expect((await invoke(SESSION_STOPPED, TRACE_STOPPED)).statusCode).toBe(200);
    const stopStartMs = Date.now();
    await stack.data.send(
      new StopRuntimeSessionCommand({ agentRuntimeArn: stack.arn, runtimeSessionId: SESSION_STOPPED }),
    );
    // The worker ended on its own once flushed, not killed when the grace ran out.
    expect(Date.now() - stopStartMs).toBeLessThan(GRACE_MS);
    // The stop has returned: the worker has exited. Its spans were sent during the stop; give the
    // collector time to store them, well past what a forward takes.
    const got = await until(
      'the stopped session’s spans',
      async () => ((await agentSpans(stack, TRACE_STOPPED)) >= expected ? expected : undefined),
      15_000,
    ).catch(() => agentSpans(stack, TRACE_STOPPED));
    expect(got).toBe(expected);
  }, 120_000);
});

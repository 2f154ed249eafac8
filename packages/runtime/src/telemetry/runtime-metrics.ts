// AgentCore's runtime metrics, with its names — Invocations, Throttles, SystemErrors, UserErrors,
// TotalErrors, Latency, SessionCount, and the session gauges read at each collection — with its
// dimensions Resource (runtime ARN), Name (`<runtime name>::<endpoint>`), Operation.
import { type Attributes, type Meter } from '@opentelemetry/api';
import { RUNTIME_METRIC } from './metric-names.js';
import { type OperationTarget } from './operation.js';
import { type CgroupFigures, createUsageSampler } from './process-usage.js';

/** Latency buckets (ms): sub-10 ms errors up to the 15-minute request limit. */
const LATENCY_BUCKETS_MS = [
  5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10_000, 30_000, 60_000, 120_000, 300_000,
  900_000,
];

/** What a session contributes to the runtime's metrics (a live session of the session manager). */
export interface ObservedSession {
  readonly runtimeId: string;
  readonly sessionId: string;
  readonly worker: { readonly pid: number; usage?(): CgroupFigures | undefined } | undefined;
}

/** The kind AgentCore counts an answered call as, from its HTTP status. */
export function errorKind(status: number): 'Throttles' | 'SystemErrors' | 'UserErrors' | undefined {
  if (status === 429) return 'Throttles';
  if (status >= 500) return 'SystemErrors';
  if (status >= 400) return 'UserErrors';
  return undefined;
}

/** The dimensions of a call's (or a runtime's session) metric points. */
function dimensions(target: OperationTarget | undefined, operation: string): Attributes {
  const attrs: Attributes = { Operation: operation };
  if (target) {
    attrs.Resource = target.runtimeArn;
    attrs.Name = `${target.runtimeName}::${target.qualifier ?? 'DEFAULT'}`;
  }
  return attrs;
}

export function createRuntimeMetrics(meter: Meter) {
  const callCounter = (name: string, description: string) =>
    meter.createCounter(name, { unit: '{call}', description });
  const counters = {
    Invocations: callCounter(RUNTIME_METRIC.invocations, 'Calls to the data plane'),
    Throttles: callCounter(RUNTIME_METRIC.throttles, 'Calls refused with 429'),
    SystemErrors: callCounter(RUNTIME_METRIC.systemErrors, 'Calls that failed with 5xx'),
    UserErrors: callCounter(
      RUNTIME_METRIC.userErrors,
      'Calls that failed with 4xx other than 429 (caller or container errors, 424)',
    ),
    TotalErrors: callCounter(RUNTIME_METRIC.totalErrors, 'SystemErrors + UserErrors'),
  };
  const latency = meter.createHistogram(RUNTIME_METRIC.latency, {
    unit: 'ms',
    description: 'Request received to last response byte',
    advice: { explicitBucketBoundaries: LATENCY_BUCKETS_MS },
  });
  const sessionCount = meter.createCounter(RUNTIME_METRIC.sessionCount, {
    unit: '{session}',
    description: 'Sessions started',
  });

  /** One answered data-plane call: counted by the error kind of the status it was answered with. */
  const recordCall = (
    name: string,
    target: OperationTarget | undefined,
    status: number,
    latencyMs: number,
  ) => {
    const attrs = dimensions(target, name);
    const kind = errorKind(status);
    counters.Invocations.add(1, attrs);
    counters.Throttles.add(kind === 'Throttles' ? 1 : 0, attrs);
    counters.SystemErrors.add(kind === 'SystemErrors' ? 1 : 0, attrs);
    counters.UserErrors.add(kind === 'UserErrors' ? 1 : 0, attrs);
    counters.TotalErrors.add(kind === 'SystemErrors' || kind === 'UserErrors' ? 1 : 0, attrs);
    latency.record(latencyMs, attrs);
  };

  /** A session started for a call of the runtime. */
  const countSessionStart = (target: OperationTarget) =>
    sessionCount.add(1, dimensions(target, 'InvokeAgentRuntime'));

  /** Live sessions, read at each metric collection (ActiveSessionCount, CPU and memory usage). */
  const observeSessions = (
    list: () => readonly ObservedSession[],
    runtimeOf: (id: string) => OperationTarget | undefined,
  ) => {
    const usage = createUsageSampler();
    const active = meter.createObservableGauge(RUNTIME_METRIC.activeSessionCount, {
      unit: '{session}',
      description: 'Sessions alive',
    });
    const cpu = meter.createObservableCounter(RUNTIME_METRIC.vcpuSeconds, {
      unit: 's',
      description: "CPU time of the session's processes (user + system)",
    });
    const memoryGbHours = meter.createObservableCounter(RUNTIME_METRIC.memoryGbHours, {
      unit: 'GBh',
      description: "Resident memory of the session's processes integrated over time",
    });
    const memory = meter.createObservableGauge(RUNTIME_METRIC.memoryUsed, {
      unit: 'By',
      description: "Resident memory of the session's processes",
    });
    meter.addBatchObservableCallback(
      (result) => {
        const sessions = list();
        const perRuntime = new Map<string, number>();
        for (const s of sessions) perRuntime.set(s.runtimeId, (perRuntime.get(s.runtimeId) ?? 0) + 1);
        for (const [runtimeId, count] of perRuntime) {
          const target = runtimeOf(runtimeId);
          result.observe(active, count, dimensions(target, 'InvokeAgentRuntime'));
        }
        const samples = usage.sample(
          sessions
            .filter((s) => s.worker && s.worker.pid > 0)
            .map((s) => ({
              key: `${s.runtimeId}\u0000${s.sessionId}`,
              pid: s.worker!.pid,
              cgroup: () => s.worker!.usage?.(),
            })),
        );
        for (const s of sessions) {
          const sample = samples.get(`${s.runtimeId}\u0000${s.sessionId}`);
          if (!sample) continue;
          const target = runtimeOf(s.runtimeId);
          const attrs: Attributes = {
            ...dimensions(target, 'InvokeAgentRuntime'),
            'session.id': s.sessionId,
          };
          result.observe(cpu, sample.cpuSeconds, attrs);
          result.observe(memoryGbHours, sample.memoryGbHours, attrs);
          result.observe(memory, sample.rssBytes, attrs);
        }
      },
      [active, cpu, memoryGbHours, memory],
    );
  };

  return { recordCall, countSessionStart, observeSessions };
}

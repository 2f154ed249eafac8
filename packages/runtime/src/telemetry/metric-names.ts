/**
 * The names of the runtime's own metrics (AgentCore's runtime metrics and the per-session usage
 * ones). They are the runtime's alone: a session's telemetry relay refuses a tenant metric that
 * takes one of them, so no session can add to another's Invocations or vCPU bill.
 */
export const RUNTIME_METRIC = {
  invocations: 'Invocations',
  throttles: 'Throttles',
  systemErrors: 'SystemErrors',
  userErrors: 'UserErrors',
  totalErrors: 'TotalErrors',
  latency: 'Latency',
  sessionCount: 'SessionCount',
  activeSessionCount: 'ActiveSessionCount',
  vcpuSeconds: 'agent.runtime.vcpu.seconds.used',
  memoryGbHours: 'agent.runtime.memory.gb_hours.used',
  memoryUsed: 'agent.runtime.memory.used',
} as const;

export const RUNTIME_METRIC_NAMES: ReadonlySet<string> = new Set(Object.values(RUNTIME_METRIC));

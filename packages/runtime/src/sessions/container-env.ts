import { tenantServiceName } from './otlp-stamp.js';

/**
 * A session container's environment from the runtime's worker environment: its scratch home and
 * temp folder are the container's own /tmp (the root filesystem is read-only), the image keeps its
 * own PATH, and its telemetry names the tenant's service, never one of agentrt's.
 */
export function containerEnv(base: Record<string, string>, runtimeName: string): Record<string, string> {
  const env: Record<string, string> = { ...base, HOME: '/tmp', TMPDIR: '/tmp' };
  delete env.PATH;
  env.OTEL_SERVICE_NAME = tenantServiceName(env.OTEL_SERVICE_NAME, runtimeName);
  return env;
}

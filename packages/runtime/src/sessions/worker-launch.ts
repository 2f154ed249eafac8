// How a session's worker is launched: the environment it gets (the runtime's few variables, the
// version's own, the ports, the telemetry endpoint it may reach, the launcher preload), its health
// check, and what its start span says of it.
import { join } from 'node:path';
import { type RuntimeConfig } from '../config.js';
import { type Logger } from '../logger.js';
import { type LaunchSpec } from './artifact.js';
import { type SessionTarget } from './backend.js';
import { RELAY_PORT } from './backends/bwrap.js';
import { fromRuntimeEnv } from './helpers.js';
import { findInstrumentPreload } from './instrument-preload.js';
import { type Worker } from './worker.js';

/** What a worker inherits from the runtime's own environment (before its runtime's variables). */
const WORKER_RUNTIME_VARIABLES = [
  'PATH',
  'LANG',
  'LC_ALL',
  'TZ',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
];

/** How a version's pods are launched: its image, as the cluster pulls it. */
export const IMAGE_LAUNCH = (target: SessionTarget): LaunchSpec => ({
  kind: 'image',
  image: target.version.config.agentRuntimeArtifact.containerConfiguration?.containerUri ?? '',
  engine: 'podman',
});

/** `/ping` for HTTP, A2A and AG-UI workers; a TCP connect for MCP ones. */
export const healthCheckOf = (target: SessionTarget): 'ping' | 'connect' =>
  target.version.config.protocolConfiguration?.serverProtocol === 'MCP' ? 'connect' : 'ping';

/**
 * What a start span says of a worker whose cluster decided how it launched (agent-sandbox: the
 * claim adopted a warm-pool sandbox or made one): its pod and launch type, once known.
 */
export function launchAttributes(worker: Worker | undefined): Record<string, string> {
  const launched = worker?.launchType?.();
  return launched && worker?.podName ? { 'k8s.pod.name': worker.podName, launch_type: launched } : {};
}

/** What a start span says of its worker: its pid, or its pod (a claim's, once bound: readiness). */
export function workerAttributes(worker: Worker): Record<string, string | number> {
  if (worker.podName) return { 'k8s.pod.name': worker.podName };
  return worker.pid > 0 ? { 'process.pid': worker.pid } : {};
}

export interface WorkerEnvOptions {
  config: Readonly<RuntimeConfig>;
  logger: Logger;
  /** The runtime's own origin once it listens, for `AGENTCORE_RUNTIME_URL` in A2A workers. */
  origin?: (() => string) | undefined;
}

/** The environment of each worker a session manager starts, and the launcher preload it resolved. */
export function createWorkerEnv({ config, logger, origin }: WorkerEnvOptions) {
  let instrumentPath: string | undefined | null = null; // null = not resolved yet
  const resolveInstrument = (): string | undefined => {
    if (instrumentPath !== null) return instrumentPath;
    instrumentPath = findInstrumentPreload();
    if (!instrumentPath)
      logger.warn(
        'AGENTRT_INSTRUMENT_WORKERS is on but @agentrt/instrument is not resolvable (or not built); workers run uninstrumented',
      );
    return instrumentPath;
  };

  const workerEnv = (
    target: SessionTarget,
    launch: LaunchSpec,
    port: number,
    sessionDir: string,
    relayed: boolean,
  ): Record<string, string> => {
    const { runtime, version } = target;
    const user = version.config.environmentVariables ?? {};
    const region = runtime.arn.split(':')[3] ?? config.region;
    const env = fromRuntimeEnv(WORKER_RUNTIME_VARIABLES);
    Object.assign(env, user, {
      PORT: String(port),
      AWS_REGION: region,
      AWS_DEFAULT_REGION: region,
      TMPDIR: join(sessionDir, 'tmp'),
      HOME: join(sessionDir, 'home'),
      OTEL_RESOURCE_ATTRIBUTES: [`cloud.resource_id=${runtime.arn}`, user.OTEL_RESOURCE_ATTRIBUTES]
        .filter(Boolean)
        .join(','),
    });
    // Loopback only, whatever the artifact asks: in process-group mode 0.0.0.0 would open the worker
    // to every other session and the network; a sandbox's own namespace is reached through its bridge.
    if (launch.kind === 'process') Object.assign(env, { HOST: '127.0.0.1', AGENTRT_HOST: '127.0.0.1' });
    env.OTEL_SERVICE_NAME ??= runtime.name;
    // An A2A agent's card must point back through the runtime, as the hosted service's does.
    if (version.config.protocolConfiguration?.serverProtocol === 'A2A' && origin)
      env.AGENTCORE_RUNTIME_URL ??= `${origin()}/runtimes/${encodeURIComponent(runtime.arn)}/invocations/`;
    if (config.otlpEndpoint && !user.OTEL_EXPORTER_OTLP_ENDPOINT) {
      if (relayed) {
        // The only OTLP endpoint a sandboxed worker reaches: its session's relay (JSON only).
        env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${RELAY_PORT}`;
        env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
      } else env.OTEL_EXPORTER_OTLP_ENDPOINT = config.otlpEndpoint;
    }
    if (config.instrumentWorkers && launch.kind === 'process' && launch.node) {
      const path = resolveInstrument();
      if (path) env.NODE_OPTIONS = [user.NODE_OPTIONS, `--require ${path}`].filter(Boolean).join(' ');
    }
    return env;
  };

  return {
    workerEnv,
    /** A version's image worker (a cluster's warm pods): its environment and probe. */
    imageWorker: (target: SessionTarget) => ({
      env: (port: number, relayed: boolean) =>
        workerEnv(target, IMAGE_LAUNCH(target), port, join(config.dataDir, 'sessions'), relayed),
      healthCheck: healthCheckOf(target),
    }),
    /** The launcher preload workers get, once resolved (undefined: none). */
    instrumentPath: (): string | undefined => instrumentPath ?? undefined,
  };
}

import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { LOG_LEVELS, type LogLevel } from '@agentrt/kit';
import { parseKeyPairsIntoRecord } from '@opentelemetry/core';
import { type OtlpProtocol } from './telemetry/otlp-providers.js';
import { type ContainerEngineSetting } from './sessions/container-engine.js';
import { type EvaluationSettings } from './evaluate/evaluation-service.js';
import { type JudgeProviderName } from './evaluate/judge/judge-model.js';
import { type Env, EnvReader, type EnvReaders } from './env-reader.js';

/**
 * How workers are isolated: `auto` uses the bubblewrap sandbox when it works (Linux), `bwrap` fails
 * without it, `none` never uses it (refused when the runtime is root), `unsafe-process` never uses it
 * even as root.
 */
export type IsolationSetting = 'auto' | 'bwrap' | 'none' | 'unsafe-process';

/** Options of {@link createRuntimeServer}; each one beats its `AGENTRT_*` env var, which beats the default. */
export interface RuntimeServerOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Where the SQLite state file and the per-session directories live. */
  dataDir?: string;
  region?: string;
  accountId?: string;
  /** How long a new session's worker may take to answer `/ping` before the invoke fails with 424. */
  startTimeoutMs?: number;
  /** Between SIGTERM and SIGKILL when a worker is stopped. */
  stopGraceMs?: number;
  /** How often an idle session's `/ping` is polled. */
  pingIntervalMs?: number;
  /** Cap on live sessions (all runtimes); one more gives 402 ServiceQuotaExceededException. */
  maxSessions?: number;
  /** Workers booting at the same time; more wait their turn (default 8 × CPU cores, at least 32). */
  maxConcurrentStarts?: number;
  /** Pre-started workers kept per runtime version at least, adopted by new sessions. */
  warmPoolSize?: number;
  /**
   * Most pre-started workers per version: the pool follows the version's new sessions of the last
   * 30 s up to this (0: only the fixed warmPoolSize).
   */
  warmPoolMax?: number;
  isolation?: IsolationSetting;
  /** Host uid and gid sandboxed workers run as when the runtime runs as root (default 65534, nobody). */
  sandboxUid?: number;
  sandboxGid?: number;
  /** Host loopback ports a sandboxed session may reach at 127.0.0.1:<port> (fixture APIs, model stubs). */
  sandboxHostPorts?: number[];
  /** Host names accepted in `Host` besides loopback names, IP literals and `host` (DNS rebinding guard). */
  allowedHosts?: string[];
  /**
   * Browser origins that may call the runtime across sites (CORS), e.g. the collector's Inspector
   * page: `http://127.0.0.1:4318`.
   */
  allowedOrigins?: string[];
  /** Refuse bearer JWTs without an `exp` claim (default true). */
  jwtRequireExp?: boolean;
  /** Per-session limits through cgroups (root runtime): memory in MiB, CPUs, processes + threads. */
  sessionMemoryMb?: number;
  sessionVcpus?: number;
  sessionPids?: number;
  /** Size of a sandboxed session's scratch tmpfs (/tmp and its home) in MiB, charged to its memory. */
  sessionDiskMb?: number;
  /** Size of a session's storage volume (`sessionStorage` under /mnt) in MiB, root runtime. */
  sessionStorageMb?: number;
  /**
   * How long a session's storage may go unused (no start of the session on its version) before it
   * is removed, in seconds (default 14 days, the hosted service's idle expiry).
   */
  sessionStorageIdleS?: number;
  /** Which engine runs image artifacts: `auto` (podman, else Docker), `podman` or `docker`. */
  containerEngine?: ContainerEngineSetting;
  /**
   * Where sessions run: `local` (default: this host's backends) or `kubernetes` (one pod per
   * session, through KUBECONFIG or the in-cluster service account).
   */
  sessions?: 'local' | 'kubernetes';
  /**
   * How the kubernetes backend makes sessions: `pods` (default: its own pods and warm pods, any
   * cluster) or `agent-sandbox` (a SandboxClaim per session against a SandboxTemplate and
   * SandboxWarmPool per version, for clusters running kubernetes-sigs/agent-sandbox's controller).
   */
  kubernetesMode?: 'pods' | 'agent-sandbox';
  /** The RuntimeClass of session pods (`gvisor`, `kata`); blank: the cluster's default runtime. */
  kubernetesRuntimeClass?: string;
  /**
   * How long an invocation waits for its session's pod to become Ready (default 30 s); past it,
   * 503 with Retry-After while the pod goes on starting (up to startTimeoutMs).
   */
  kubernetesHoldMs?: number;
  /**
   * Pods mode: how long a new session's Lease may name no pod (default 30 s) before another replica
   * takes it over: the replica that made it died mid-start. Longer than a slow pod create takes.
   */
  kubernetesSessionLeaseMs?: number;
  /** The OCI runtime of podman's session containers: `runc` (default) or `runsc` (gVisor). */
  ociRuntime?: 'runc' | 'runsc';
  /**
   * Where runtimes, versions and endpoints live: `sqlite` (one file in the data dir, one runtime
   * process) or `kubernetes` (agentrt.dev/v1 custom resources, shared by every runtime replica).
   */
  controlStore?: 'sqlite' | 'kubernetes';
  /** The namespace of the Kubernetes control store and of the leader Lease. */
  kubernetesNamespace?: string;
  /** A kubeconfig file for the Kubernetes control store; blank: KUBECONFIG, ~/.kube/config or in-cluster. */
  kubeconfig?: string;
  /** This replica's name, the leader Lease's holderIdentity (the pod name; default: the host name). */
  replicaName?: string;
  /**
   * This runtime process: the replica's name and a random suffix, new at every start. Its session
   * pods carry it, and a heartbeat Lease says it is alive; once that lapses, the leader deletes them.
   */
  replicaInstance?: string;
  /**
   * Lease duration of the leader and heartbeat Leases, in seconds (default 15): a renew deadline of
   * 2/3 of it, tries every 2/15, and the orphan reaper's pass every 2/3 and its pod grace 2×.
   */
  leaseSeconds?: number;
  /**
   * `snapshot` (default): a `file://` artifact is copied into the data dir at create/update, so a
   * version runs what the directory held then; `live` runs it in place (`agentrt dev`'s hot reload).
   */
  fileArtifacts?: 'snapshot' | 'live';
  /** Largest `file://` directory a version copies, in MiB. */
  artifactMaxMb?: number;
  /** Registries (`host:port`) image pulls may reach over plain HTTP, as Docker's insecure-registries. */
  insecureRegistries?: string[];
  /** Faithful AWS 424 message (`Received error (N) from runtime...`) without the container's body. */
  terseErrors?: boolean;
  /** Accept session ids of 1–256 chars instead of 33–256. */
  laxSessionIds?: boolean;
  /** Lower bound of lifecycle settings in seconds (AWS: 60); tests lower it. */
  lifecycleMinSeconds?: number;
  /** When non-empty, every request must carry one of these keys (x-api-key or the SigV4 access key id). */
  apiKeys?: string[];
  /** Preload @agentrt/instrument into node workers. */
  instrumentWorkers?: boolean;
  /**
   * Record each invocation's request (payload up to 64 KiB, content type, accept, custom headers) on
   * its InvokeAgentRuntime span, so `agentrt replay` can send it again. Off by default: payloads may
   * hold personal data. `agentrt dev` turns it on (AGENTRT_CAPTURE_REQUESTS).
   */
  captureRequests?: boolean;
  /**
   * OTLP/HTTP base endpoint: the runtime's spans, metrics and logs (worker output included) are
   * exported there, and workers get it as OTEL_EXPORTER_OTLP_ENDPOINT.
   */
  otlpEndpoint?: string;
  /** Encoding of the runtime's own OTLP exports (OTEL_EXPORTER_OTLP_PROTOCOL). */
  otlpProtocol?: OtlpProtocol;
  /** How often the runtime exports its metrics (OTEL_METRIC_EXPORT_INTERVAL, default 60000). */
  metricExportIntervalMs?: number;
  /**
   * Headers of the runtime's OTLP exports (OTEL_EXPORTER_OTLP_HEADERS, e.g. the collector's ingest
   * token `Authorization=Bearer%20<token>`); sessions' telemetry relays forward with them.
   */
  otlpHeaders?: Record<string, string>;
  /** Largest OTLP export a session's telemetry relay takes (AGENTRT_OTLP_MAX_EXPORT_BYTES). */
  otlpRelayMaxExportBytes?: number;
  /** Bytes of exports a session may have in its telemetry relay at once (AGENTRT_OTLP_SESSION_BYTES). */
  otlpRelaySessionBytes?: number;
  maxBodyBytes?: number;
  /** Largest WebSocket frame relayed (AWS: 64 KiB); a bigger one closes the connection with 1009. */
  wsMaxFrameBytes?: number;
  /** WebSocket frames per second per connection (AWS: 250); more closes it with 1008. */
  wsMaxFramesPerSecond?: number;
  /** Longest a command from InvokeAgentRuntimeCommand may ask for, in seconds (AWS: 3600). */
  commandMaxTimeoutS?: number;
  logLevel?: LogLevel;
  /** Evaluate's judge model, collector and prompts (see evaluate/evaluation-service.ts). */
  evaluation?: EvaluationSettings;
  /** How often the stored online evaluation rules look for completed sessions (ms). */
  onlineEvaluationIntervalMs?: number;
  /** How far back a rule that was down catches up on sessions that ended meanwhile (ms). */
  onlineEvaluationCatchUpMs?: number;
  /** Where JSON log lines go (default: stdout). */
  logSink?: (line: string) => void;
}

export type { LogLevel } from '@agentrt/kit';

export interface RuntimeConfig extends Required<Omit<RuntimeServerOptions, 'otlpEndpoint' | 'logSink'>> {
  otlpEndpoint: string | undefined;
  logSink: (line: string) => void;
  /** Warnings about bad env values, logged once the logger exists. */
  warnings: readonly string[];
}

export const DEFAULT_PORT = 8787;

/** Resolves the runtime's settings: explicit options, then env, then defaults. Blank env = unset. */
export function resolveRuntimeConfig(
  options: RuntimeServerOptions = {},
  env: Env = process.env,
): Readonly<RuntimeConfig> {
  const read = new EnvReader(env);
  // Read first, and even when an option beats them, so a bad value still gets its warning.
  const isolation = read.oneOf<IsolationSetting>(
    'AGENTRT_ISOLATION',
    ['auto', 'bwrap', 'none', 'unsafe-process'],
    'auto',
  );
  const otlpProtocol = read.oneOf<OtlpProtocol>(
    'OTEL_EXPORTER_OTLP_PROTOCOL',
    ['http/protobuf', 'http/json'],
    'http/protobuf',
  );
  const logLevel = read.oneOf<LogLevel>('AGENTRT_LOG_LEVEL', LOG_LEVELS, 'info');

  const replicaName = options.replicaName ?? read.str('AGENTRT_K8S_POD_NAME') ?? os.hostname();
  const config: RuntimeConfig = {
    ...listenSettings(options, read),
    ...workerSettings(options, read),
    ...sandboxSettings(options, read, isolation),
    ...sessionLimits(options, read),
    ...backendSettings(options, read),
    ...clusterSettings(options, read, replicaName),
    ...onlineEvaluationSettings(options, read),
    replicaInstance: options.replicaInstance ?? `${replicaName}-${randomBytes(4).toString('hex')}`,
    ...artifactSettings(options, read),
    ...apiSettings(options, read),
    ...telemetrySettings(options, read, otlpProtocol),
    ...requestLimits(options, read),
    logLevel: options.logLevel ?? logLevel,
    evaluation: options.evaluation ?? evaluationSettings(read, options.otlpEndpoint),
    logSink: options.logSink ?? ((line) => process.stdout.write(line)),
    warnings: read.warnings,
  };
  return Object.freeze(config);
}

type Options = RuntimeServerOptions;

function listenSettings(options: Options, read: EnvReader) {
  return {
    host: options.host ?? read.str('AGENTRT_RUNTIME_HOST') ?? '127.0.0.1',
    port: options.port ?? read.int('AGENTRT_RUNTIME_PORT', DEFAULT_PORT),
    dataDir: resolve(
      options.dataDir ?? read.str('AGENTRT_DATA_DIR') ?? join(os.homedir(), '.agentrt', 'runtime'),
    ),
    region: options.region ?? read.str('AGENTRT_REGION') ?? read.str('AWS_REGION') ?? 'us-east-1',
    accountId: options.accountId ?? read.str('AGENTRT_ACCOUNT_ID') ?? '123456789012',
  };
}

function workerSettings(options: Options, read: EnvReader) {
  return {
    startTimeoutMs: options.startTimeoutMs ?? read.int('AGENTRT_START_TIMEOUT_MS', 60_000, 1),
    stopGraceMs: options.stopGraceMs ?? read.int('AGENTRT_STOP_GRACE_MS', 5_000),
    pingIntervalMs: options.pingIntervalMs ?? read.int('AGENTRT_PING_INTERVAL_MS', 2_000, 10),
    maxSessions: options.maxSessions ?? read.int('AGENTRT_MAX_SESSIONS', 100, 1),
    warmPoolSize: options.warmPoolSize ?? read.int('AGENTRT_WARM_POOL_SIZE', 0),
    warmPoolMax: options.warmPoolMax ?? read.int('AGENTRT_WARM_POOL_MAX', 0),
    maxConcurrentStarts:
      options.maxConcurrentStarts ??
      read.int('AGENTRT_MAX_CONCURRENT_STARTS', Math.max(32, 8 * os.availableParallelism()), 1),
  };
}

/** The sandbox, and the Host, Origin and JWT checks of every request. */
function sandboxSettings(options: Options, read: EnvReader, isolation: IsolationSetting) {
  return {
    isolation: options.isolation ?? isolation,
    sandboxUid: options.sandboxUid ?? read.int('AGENTRT_SANDBOX_UID', 65534, 1),
    sandboxGid: options.sandboxGid ?? read.int('AGENTRT_SANDBOX_GID', 65534, 1),
    sandboxHostPorts: options.sandboxHostPorts ?? read.ports('AGENTRT_SANDBOX_HOST_PORTS'),
    allowedHosts: options.allowedHosts ?? read.list('AGENTRT_RUNTIME_ALLOWED_HOSTS'),
    allowedOrigins: options.allowedOrigins ?? read.list('AGENTRT_RUNTIME_ALLOWED_ORIGINS'),
    jwtRequireExp: options.jwtRequireExp ?? read.bool('AGENTRT_JWT_REQUIRE_EXP', true),
  };
}

function sessionLimits(options: Options, read: EnvReader) {
  return {
    sessionMemoryMb: options.sessionMemoryMb ?? read.int('AGENTRT_SESSION_MEMORY_MB', 8192, 16),
    sessionVcpus: options.sessionVcpus ?? read.int('AGENTRT_SESSION_VCPUS', 2, 1),
    sessionPids: options.sessionPids ?? read.int('AGENTRT_SESSION_PIDS', 1024, 16),
    sessionDiskMb: options.sessionDiskMb ?? read.int('AGENTRT_SESSION_DISK_MB', 1024, 1),
    sessionStorageMb: options.sessionStorageMb ?? read.int('AGENTRT_SESSION_STORAGE_MB', 1024, 8),
    sessionStorageIdleS:
      options.sessionStorageIdleS ?? read.int('AGENTRT_SESSION_STORAGE_IDLE_S', 1_209_600, 1),
  };
}

/** Where sessions run, with which engine, and where the control plane keeps its records. */
function backendSettings(options: Options, read: EnvReader) {
  return {
    sessions:
      options.sessions ??
      read.oneOf<'local' | 'kubernetes'>('AGENTRT_SESSIONS', ['local', 'kubernetes'], 'local'),
    containerEngine:
      options.containerEngine ??
      read.oneOf<ContainerEngineSetting>('AGENTRT_CONTAINER_ENGINE', ['auto', 'podman', 'docker'], 'auto'),
    ociRuntime:
      options.ociRuntime ?? read.oneOf<'runc' | 'runsc'>('AGENTRT_OCI_RUNTIME', ['runc', 'runsc'], 'runc'),
    controlStore:
      options.controlStore ??
      read.oneOf<'sqlite' | 'kubernetes'>('AGENTRT_CONTROL_STORE', ['sqlite', 'kubernetes'], 'sqlite'),
  };
}

function clusterSettings(options: Options, read: EnvReader, replicaName: string) {
  return {
    kubernetesNamespace: options.kubernetesNamespace ?? read.str('AGENTRT_K8S_NAMESPACE') ?? 'default',
    kubeconfig: options.kubeconfig ?? read.str('KUBECONFIG') ?? '',
    kubernetesRuntimeClass: options.kubernetesRuntimeClass ?? read.str('AGENTRT_K8S_RUNTIME_CLASS') ?? '',
    kubernetesHoldMs: options.kubernetesHoldMs ?? read.int('AGENTRT_K8S_HOLD_MS', 30_000, 1),
    kubernetesSessionLeaseMs:
      options.kubernetesSessionLeaseMs ?? read.int('AGENTRT_K8S_SESSION_LEASE_MS', 30_000, 1),
    kubernetesMode:
      options.kubernetesMode ??
      read.oneOf<'pods' | 'agent-sandbox'>('AGENTRT_K8S_MODE', ['pods', 'agent-sandbox'], 'pods'),
    replicaName,
    leaseSeconds: options.leaseSeconds ?? read.int('AGENTRT_K8S_LEASE_S', 15, 1),
  };
}

/** How often stored online evaluation rules look for completed sessions, and how far back they catch up. */
function onlineEvaluationSettings(options: Options, read: EnvReader) {
  return {
    onlineEvaluationIntervalMs:
      options.onlineEvaluationIntervalMs ?? read.int('AGENTRT_ONLINE_EVAL_INTERVAL_MS', 10_000, 10),
    onlineEvaluationCatchUpMs:
      options.onlineEvaluationCatchUpMs ?? read.int('AGENTRT_ONLINE_EVAL_CATCH_UP_S', 86_400, 0) * 1000,
  };
}

function artifactSettings(options: Options, read: EnvReader) {
  return {
    fileArtifacts:
      options.fileArtifacts ??
      read.oneOf<'snapshot' | 'live'>('AGENTRT_FILE_ARTIFACTS', ['snapshot', 'live'], 'snapshot'),
    artifactMaxMb: options.artifactMaxMb ?? read.int('AGENTRT_ARTIFACT_MAX_MB', 1024, 1),
    insecureRegistries: options.insecureRegistries ?? read.list('AGENTRT_INSECURE_REGISTRIES'),
  };
}

/** How the API answers and whom it lets in. */
function apiSettings(options: Options, read: EnvReader) {
  return {
    terseErrors: options.terseErrors ?? read.bool('AGENTRT_TERSE_ERRORS', false),
    laxSessionIds: options.laxSessionIds ?? read.bool('AGENTRT_LAX_SESSION_IDS', false),
    lifecycleMinSeconds: options.lifecycleMinSeconds ?? read.int('AGENTRT_LIFECYCLE_MIN_S', 60, 1),
    apiKeys: options.apiKeys ?? read.list('AGENTRT_API_KEYS'),
  };
}

function telemetrySettings(options: Options, read: EnvReader, otlpProtocol: OtlpProtocol) {
  return {
    instrumentWorkers: options.instrumentWorkers ?? read.bool('AGENTRT_INSTRUMENT_WORKERS', false),
    captureRequests: options.captureRequests ?? read.bool('AGENTRT_CAPTURE_REQUESTS', false),
    otlpEndpoint: options.otlpEndpoint ?? read.str('OTEL_EXPORTER_OTLP_ENDPOINT'),
    otlpProtocol: options.otlpProtocol ?? otlpProtocol,
    metricExportIntervalMs:
      options.metricExportIntervalMs ?? read.int('OTEL_METRIC_EXPORT_INTERVAL', 60_000, 100),
    otlpHeaders: options.otlpHeaders ?? parseKeyPairsIntoRecord(read.str('OTEL_EXPORTER_OTLP_HEADERS')),
    otlpRelayMaxExportBytes:
      options.otlpRelayMaxExportBytes ?? read.int('AGENTRT_OTLP_MAX_EXPORT_BYTES', 4 * 1024 * 1024, 1024),
    otlpRelaySessionBytes:
      options.otlpRelaySessionBytes ?? read.int('AGENTRT_OTLP_SESSION_BYTES', 16 * 1024 * 1024, 1024),
  };
}

function requestLimits(options: Options, read: EnvReader) {
  return {
    maxBodyBytes: options.maxBodyBytes ?? read.int('AGENTRT_MAX_BODY_BYTES', 100_000_000, 1),
    wsMaxFrameBytes: options.wsMaxFrameBytes ?? read.int('AGENTRT_WS_MAX_FRAME_BYTES', 64 * 1024, 1),
    wsMaxFramesPerSecond: options.wsMaxFramesPerSecond ?? read.int('AGENTRT_WS_MAX_FRAMES_PER_S', 250, 1),
    commandMaxTimeoutS: options.commandMaxTimeoutS ?? read.int('AGENTRT_COMMAND_MAX_TIMEOUT_S', 3600, 1),
  };
}

/**
 * Evaluate's settings: the judge (AGENTRT_JUDGE_PROVIDER, else AGENTRT_MODEL_PROVIDER, else the
 * offline judge; AGENTRT_JUDGE_MODEL_ID; the OpenAI and AWS variables the examples read), the
 * collector that holds session spans (AGENTRT_COLLECTOR_URL, else the OTLP endpoint) and prompts.
 */
function evaluationSettings(env: EnvReaders, otlpEndpoint?: string): EvaluationSettings {
  const providers: readonly JudgeProviderName[] = ['offline', 'openai', 'bedrock'];
  const settings: EvaluationSettings = {
    judge: {
      provider: env.oneOf(
        'AGENTRT_JUDGE_PROVIDER',
        providers,
        env.oneOf('AGENTRT_MODEL_PROVIDER', providers, 'offline'),
      ),
      timeoutMs: env.int('AGENTRT_JUDGE_TIMEOUT_MS', 60_000, 1),
    },
  };
  const judge = settings.judge;
  const set = (
    key: 'modelId' | 'openaiBaseUrl' | 'openaiApiKey' | 'awsRegion' | 'bedrockEndpoint',
    ...names: string[]
  ) => {
    const value = names.map((n) => env.str(n)).find((v) => v !== undefined);
    if (value !== undefined) judge[key] = value;
  };
  set('modelId', 'AGENTRT_JUDGE_MODEL_ID');
  set('openaiBaseUrl', 'OPENAI_BASE_URL');
  set('openaiApiKey', 'OPENAI_API_KEY');
  set('awsRegion', 'AWS_REGION', 'AWS_DEFAULT_REGION');
  set('bedrockEndpoint', 'AWS_ENDPOINT_URL_BEDROCK_RUNTIME');
  const collectorUrl =
    env.str('AGENTRT_COLLECTOR_URL') ?? otlpEndpoint ?? env.str('OTEL_EXPORTER_OTLP_ENDPOINT');
  const token = env.str('AGENTRT_QUERY_TOKEN');
  if (collectorUrl) settings.collector = { url: collectorUrl, ...(token ? { token } : {}) };
  const promptsDir = env.str('AGENTRT_EVAL_PROMPTS_DIR');
  if (promptsDir) settings.promptsDir = promptsDir;
  const evaluatorsFile = env.str('AGENTRT_EVALUATORS_FILE');
  if (evaluatorsFile) settings.evaluatorsFile = evaluatorsFile;
  return settings;
}

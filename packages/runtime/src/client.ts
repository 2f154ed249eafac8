import { randomUUID } from 'node:crypto';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/core/serde';
import { type Transport, RuntimeClientRequestError, createTransport, fail } from './client-transport.js';
import { SESSION_HEADER } from './data/data-plane.js';

export interface RuntimeSummary {
  agentRuntimeArn: string;
  agentRuntimeId: string;
  agentRuntimeName: string;
  agentRuntimeVersion: string;
  status: string;
  lastUpdatedAt: string;
  description?: string;
}

export interface RuntimeDetail extends RuntimeSummary {
  createdAt: string;
  failureReason?: string;
  agentRuntimeArtifact?: { containerConfiguration?: { containerUri?: string } };
  lifecycleConfiguration: { idleRuntimeSessionTimeout: number; maxLifetime: number };
  environmentVariables?: Record<string, string>;
  [field: string]: unknown;
}

export interface OnlineEvaluationSummary {
  onlineEvaluationConfigId: string;
  onlineEvaluationConfigName: string;
  executionStatus: string;
  /** Epoch seconds. */
  createdAt: number;
}

export interface OnlineEvaluationDetail extends OnlineEvaluationSummary {
  rule: {
    samplingConfig: { samplingPercentage: number };
    sessionConfig: { sessionTimeoutMinutes: number };
    filters: { key: string; operator: string; value: Record<string, unknown> }[];
  };
  dataSourceConfig: { cloudWatchLogs: { serviceNames: string[] } };
  evaluators: { evaluatorId: string }[];
}

/** The version-defining fields of Create and Update. */
export interface RuntimeSpec {
  containerUri: string;
  roleArn?: string;
  description?: string;
  environmentVariables?: Record<string, string>;
  lifecycleConfiguration?: { idleRuntimeSessionTimeout?: number; maxLifetime?: number };
  /** `protocolConfiguration.serverProtocol` (default HTTP). */
  serverProtocol?: 'HTTP' | 'MCP' | 'A2A' | 'AGUI';
  authorizerConfiguration?: {
    customJWTAuthorizer: { discoveryUrl: string; allowedAudience?: string[]; allowedClients?: string[] };
  };
}

/** One endpoint (qualifier) of a runtime: DEFAULT follows the latest version, named ones stay pinned. */
export interface RuntimeEndpoint {
  name: string;
  id: string;
  liveVersion?: string;
  targetVersion?: string;
  agentRuntimeEndpointArn: string;
  agentRuntimeArn: string;
  status: string;
  description?: string;
  createdAt: string;
  lastUpdatedAt: string;
}

/** A live session of the local runtime (`GET /local/sessions`, not part of the AWS API). */
export interface ActiveSession {
  sessionId: string;
  runtimeId: string;
  runtimeName: string;
  runtimeArn: string;
  version: number;
  state: string;
  pid: number | null;
  startedAt: string;
  lastActivityAt: string;
  inflight: number;
  warm: boolean;
  cpuSeconds: number | null;
  rssBytes: number | null;
}

export interface InvokeOptions {
  sessionId?: string;
  qualifier?: string;
  contentType?: string;
  accept?: string;
  /** Sent as `Authorization: Bearer <token>` (runtimes with a JWT authorizer). */
  bearerToken?: string;
  /** More headers: custom ones for the agent, `traceparent`, `X-Agentrt-Replay-Of`. */
  headers?: Record<string, string>;
}

export interface InvokeResult {
  status: number;
  sessionId: string;
  contentType: string | undefined;
  /** The body as it arrives, chunk by chunk. */
  body: AsyncIterable<Uint8Array>;
}

/** One event of InvokeAgentRuntimeCommand's stream (the SDK's `ResponseChunk`). */
export interface CommandChunk {
  contentStart?: Record<string, never>;
  contentDelta?: { stdout?: string; stderr?: string };
  contentStop?: { exitCode: number; status: 'COMPLETED' | 'TIMED_OUT' };
}

/**
 * Decodes AWS event-stream messages from a byte stream as they complete (a message may span
 * chunks). `chunk` events yield their JSON; an exception message throws with its text.
 */
export async function* decodeCommandStream(body: AsyncIterable<Uint8Array>): AsyncGenerator<CommandChunk> {
  const codec = new EventStreamCodec(toUtf8, fromUtf8);
  let buffer = Buffer.alloc(0);
  for await (const bytes of body) {
    buffer = Buffer.concat([buffer, bytes]);
    while (buffer.length >= 4) {
      const total = buffer.readUInt32BE(0);
      if (buffer.length < total) break;
      const message = codec.decode(buffer.subarray(0, total));
      buffer = buffer.subarray(total);
      const type = message.headers[':message-type']?.value;
      const payload = toUtf8(message.body);
      if (type === 'event' && message.headers[':event-type']?.value === 'chunk')
        yield JSON.parse(payload) as CommandChunk;
      else if (type === 'exception' || type === 'error') {
        const name = String(
          message.headers[':exception-type']?.value ?? message.headers[':error-code']?.value,
        );
        let text = payload;
        try {
          text = (JSON.parse(payload) as { message?: string }).message ?? payload;
        } catch {
          // not JSON: keep the raw text
        }
        throw new RuntimeClientRequestError(200, name, text);
      }
    }
  }
}

export const DEFAULT_ROLE_ARN = 'arn:aws:iam::123456789012:role/AgentRuntimeLocal';

/**
 * A small fetch-based client for the runtime's wire API (the same requests the AWS SDK clients
 * send, unsigned), used by the `agentrt` CLI. The AWS SDK clients work just as well.
 */
export function createRuntimeClient(options: { url: string; apiKey?: string }) {
  const t = createTransport(options);
  return {
    ...runtimeCalls(t),
    ...onlineEvaluationCalls(t),
    ...endpointCalls(t),
    ...localCalls(t),
    ...sessionCalls(t),
  };
}

export type RuntimeClient = ReturnType<typeof createRuntimeClient>;

/** The body of Create and Update: the version-defining fields, a fresh clientToken. */
function specBody(spec: RuntimeSpec) {
  return {
    agentRuntimeArtifact: { containerConfiguration: { containerUri: spec.containerUri } },
    roleArn: spec.roleArn ?? DEFAULT_ROLE_ARN,
    networkConfiguration: { networkMode: 'PUBLIC' },
    ...(spec.description ? { description: spec.description } : {}),
    ...(spec.environmentVariables ? { environmentVariables: spec.environmentVariables } : {}),
    ...(spec.lifecycleConfiguration ? { lifecycleConfiguration: spec.lifecycleConfiguration } : {}),
    ...(spec.serverProtocol ? { protocolConfiguration: { serverProtocol: spec.serverProtocol } } : {}),
    ...(spec.authorizerConfiguration ? { authorizerConfiguration: spec.authorizerConfiguration } : {}),
    clientToken: randomUUID(),
  };
}

const runtimePath = (id: string) => `/runtimes/${encodeURIComponent(id)}/`;

/** Create/List/Get/Update/DeleteAgentRuntime and ListAgentRuntimeVersions. */
function runtimeCalls({ call, allPages }: Transport) {
  const list = () => allPages<'agentRuntimes', RuntimeSummary>('/runtimes/', 'agentRuntimes');
  const get = (id: string) => call<RuntimeDetail>('GET', runtimePath(id));
  return {
    list,
    get,
    /** A runtime by name, id or ARN. */
    resolve(ref: string): Promise<RuntimeSummary> {
      return resolveRuntime(list, ref);
    },
    create: (name: string, spec: RuntimeSpec) =>
      call<{ agentRuntimeId: string; agentRuntimeArn: string; status: string }>('PUT', '/runtimes/', {
        agentRuntimeName: name,
        ...specBody(spec),
      }),
    update: (id: string, spec: RuntimeSpec) =>
      call<{ agentRuntimeVersion: string; status: string }>('PUT', runtimePath(id), specBody(spec)),
    delete: (id: string) => call<{ status: string }>('DELETE', runtimePath(id)),
    /** Every version of a runtime (ListAgentRuntimeVersions). */
    versions: (id: string) =>
      allPages<'agentRuntimes', RuntimeSummary>(`${runtimePath(id)}versions/`, 'agentRuntimes'),
    /** Polls until the runtime leaves CREATING/UPDATING. */
    waitSettled(id: string, timeoutMs = 60_000): Promise<RuntimeDetail> {
      return waitSettled(get, id, timeoutMs);
    },
  };
}

async function resolveRuntime(list: () => Promise<RuntimeSummary[]>, ref: string): Promise<RuntimeSummary> {
  const found = (await list()).find(
    (r) => r.agentRuntimeName === ref || r.agentRuntimeId === ref || r.agentRuntimeArn === ref,
  );
  if (!found)
    throw new RuntimeClientRequestError(404, 'ResourceNotFoundException', `No agent runtime named ${ref}`);
  return found;
}

async function waitSettled(
  get: (id: string) => Promise<RuntimeDetail>,
  id: string,
  timeoutMs: number,
): Promise<RuntimeDetail> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await get(id);
    if ((got.status !== 'CREATING' && got.status !== 'UPDATING') || Date.now() > deadline) return got;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Create/List/Get/Update/DeleteOnlineEvaluationConfig. */
function onlineEvaluationCalls({ call, allPages }: Transport) {
  const configPath = (id: string) => `/online-evaluation-configs/${encodeURIComponent(id)}`;
  return {
    /** Stores an online evaluation rule the runtime runs (CreateOnlineEvaluationConfig). */
    createOnlineEvaluation: (body: Record<string, unknown>) =>
      call<{ onlineEvaluationConfigId: string; executionStatus: string }>(
        'POST',
        '/online-evaluation-configs/create',
        body,
      ),
    onlineEvaluations: () =>
      allPages<'onlineEvaluationConfigs', OnlineEvaluationSummary>(
        '/online-evaluation-configs',
        'onlineEvaluationConfigs',
      ),
    onlineEvaluation: (id: string) => call<OnlineEvaluationDetail>('GET', configPath(id)),
    updateOnlineEvaluation: (id: string, body: Record<string, unknown>) =>
      call<{ executionStatus: string }>('PUT', configPath(id), body),
    deleteOnlineEvaluation: (id: string) => call<{ status: string }>('DELETE', configPath(id)),
  };
}

/** List/Create/Update/Get/DeleteAgentRuntimeEndpoint. */
function endpointCalls({ call, allPages }: Transport) {
  const endpointsPath = (id: string) => `${runtimePath(id)}runtime-endpoints/`;
  const endpointPath = (id: string, name: string) => `${endpointsPath(id)}${encodeURIComponent(name)}/`;
  const endpoints = (id: string) =>
    allPages<'runtimeEndpoints', RuntimeEndpoint>(endpointsPath(id), 'runtimeEndpoints');
  return {
    /** Every endpoint of a runtime, DEFAULT first (ListAgentRuntimeEndpoints). */
    endpoints,
    /** Points endpoint `name` at `version`: creates it when it does not exist, else updates it. */
    async pinEndpoint(id: string, name: string, version: string): Promise<RuntimeEndpoint> {
      const exists = (await endpoints(id)).some((e) => e.name === name);
      const body = { agentRuntimeVersion: version, clientToken: randomUUID() };
      if (exists) await call('PUT', endpointPath(id, name), body);
      else await call('PUT', endpointsPath(id), { name, ...body });
      return call<RuntimeEndpoint>('GET', endpointPath(id, name));
    },
    deleteEndpoint: (id: string, name: string) =>
      call<{ status: string }>('DELETE', `${endpointPath(id, name)}?clientToken=${randomUUID()}`),
  };
}

/** The local runtime's own calls (`/local/…`), not part of the AWS API. */
function localCalls({ call }: Transport) {
  return {
    /** Live sessions of this (local) runtime: state, times, CPU and memory. Not an AWS API. */
    activeSessions: () =>
      call<{ sessions: ActiveSession[] }>('GET', '/local/sessions').then((r) => r.sessions),
    /**
     * Gives the runtime's live sessions fresh workers, keeping their ids (`agentrt dev`'s hot
     * reload); answers once they serve. Not an AWS API.
     */
    restartSessions: (arnOrId: string) =>
      call<{ restarted: number }>(
        'POST',
        `/local/runtimes/${encodeURIComponent(arnOrId)}/sessions/restart`,
        {},
      ),
  };
}

/** The data plane: InvokeAgentRuntime, its URLs, InvokeAgentRuntimeCommand, StopRuntimeSession. */
function sessionCalls(t: Transport) {
  const { base } = t;
  return {
    invoke(arn: string, payload: string | Uint8Array, invoke: InvokeOptions = {}): Promise<InvokeResult> {
      return invokeRuntime(t, arn, payload, invoke);
    },
    /** The invocation URL MCP and A2A clients use: `…/runtimes/<escaped ARN>/invocations?qualifier=`. */
    invocationUrl: (arn: string, qualifier = 'DEFAULT') =>
      `${base}/runtimes/${encodeURIComponent(arn)}/invocations?qualifier=${encodeURIComponent(qualifier)}`,
    /** The WebSocket URL of a runtime (`ws://…/runtimes/<escaped ARN>/ws?qualifier=`). */
    webSocketUrl: (arn: string, qualifier = 'DEFAULT') =>
      `${base.replace(/^http/, 'ws')}/runtimes/${encodeURIComponent(arn)}/ws?qualifier=${encodeURIComponent(qualifier)}`,
    /** The headers every request carries (the API key when one is set). */
    headers: () => t.headers(),
    /** InvokeAgentRuntimeCommand: runs a command in a live session; yields its events as they come. */
    runCommand(
      arn: string,
      sessionId: string,
      command: string,
      options: { timeoutS?: number; qualifier?: string; bearerToken?: string } = {},
    ): Promise<AsyncGenerator<CommandChunk>> {
      return runCommand(t, arn, sessionId, command, options);
    },
    stopSession: (arn: string, sessionId: string, options: { bearerToken?: string } = {}) =>
      stopSession(t, arn, sessionId, options),
  };
}

const bearer = (token: string | undefined): Record<string, string> =>
  token ? { authorization: `Bearer ${token}` } : {};
const bodyOf = (res: Response) => res.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() });

async function invokeRuntime(
  { base, headers }: Transport,
  arn: string,
  payload: string | Uint8Array,
  invoke: InvokeOptions,
): Promise<InvokeResult> {
  const sessionId = invoke.sessionId ?? randomUUID();
  const query = invoke.qualifier ? `?qualifier=${encodeURIComponent(invoke.qualifier)}` : '';
  const res = await fetch(`${base}/runtimes/${encodeURIComponent(arn)}/invocations${query}`, {
    method: 'POST',
    headers: headers({
      ...invoke.headers,
      'content-type': invoke.contentType ?? 'application/json',
      ...(invoke.accept ? { accept: invoke.accept } : {}),
      ...bearer(invoke.bearerToken),
      [SESSION_HEADER]: sessionId,
    }),
    body: payload,
  });
  if (!res.ok) return fail(res);
  return {
    status: res.status,
    sessionId: res.headers.get(SESSION_HEADER) ?? sessionId,
    contentType: res.headers.get('content-type') ?? undefined,
    body: bodyOf(res),
  };
}

async function runCommand(
  { base, headers }: Transport,
  arn: string,
  sessionId: string,
  command: string,
  options: { timeoutS?: number; qualifier?: string; bearerToken?: string },
): Promise<AsyncGenerator<CommandChunk>> {
  const query = options.qualifier ? `?qualifier=${encodeURIComponent(options.qualifier)}` : '';
  const res = await fetch(`${base}/runtimes/${encodeURIComponent(arn)}/commands${query}`, {
    method: 'POST',
    headers: headers({
      'content-type': 'application/json',
      accept: 'application/vnd.amazon.eventstream',
      [SESSION_HEADER]: sessionId,
      ...bearer(options.bearerToken),
    }),
    body: JSON.stringify({ command, ...(options.timeoutS ? { timeout: options.timeoutS } : {}) }),
  });
  if (!res.ok) return fail(res);
  return decodeCommandStream(bodyOf(res));
}

function stopSession(
  { base, headers }: Transport,
  arn: string,
  sessionId: string,
  options: { bearerToken?: string },
): Promise<undefined> {
  return fetch(`${base}/runtimes/${encodeURIComponent(arn)}/stopruntimesession`, {
    method: 'POST',
    headers: headers({
      'content-type': 'application/json',
      [SESSION_HEADER]: sessionId,
      ...bearer(options.bearerToken),
    }),
    body: JSON.stringify({ clientToken: randomUUID() }),
  }).then((res) => (res.ok ? undefined : fail(res)));
}

import { randomUUID } from 'node:crypto';
import { SESSION_HEADER } from './data/data-plane.js';

/** An AWS-shaped error answer from the runtime (`x-amzn-errortype` + `{"message"}`). */
export class RuntimeClientRequestError extends Error {
  override name = 'RuntimeClientRequestError';
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(`${type} (${status}): ${message}`);
  }
}

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

/** The version-defining fields of Create and Update. */
export interface RuntimeSpec {
  containerUri: string;
  roleArn?: string;
  description?: string;
  environmentVariables?: Record<string, string>;
  lifecycleConfiguration?: { idleRuntimeSessionTimeout?: number; maxLifetime?: number };
}

export interface InvokeOptions {
  sessionId?: string;
  qualifier?: string;
  contentType?: string;
  accept?: string;
}

export interface InvokeResult {
  status: number;
  sessionId: string;
  contentType: string | undefined;
  /** The body as it arrives, chunk by chunk. */
  body: AsyncIterable<Uint8Array>;
}

export const DEFAULT_ROLE_ARN = 'arn:aws:iam::123456789012:role/AgentRuntimeLocal';

/**
 * A small fetch-based client for the runtime's wire API (the same requests the AWS SDK clients
 * send, unsigned), used by the `agentrt` CLI. The AWS SDK clients work just as well.
 */
export function createRuntimeClient(options: { url: string; apiKey?: string }) {
  const base = options.url.replace(/\/+$/, '');
  const headers = (extra: Record<string, string> = {}): Record<string, string> => ({
    ...(options.apiKey ? { 'x-api-key': options.apiKey } : {}),
    ...extra,
  });
  const fail = async (res: Response): Promise<never> => {
    const text = await res.text();
    let message = text;
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? text;
    } catch {
      // not JSON: keep the raw text
    }
    throw new RuntimeClientRequestError(res.status, res.headers.get('x-amzn-errortype') ?? 'Error', message);
  };
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: headers(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!res.ok) return fail(res);
    return (res.status === 204 ? {} : await res.json()) as T;
  };
  const specBody = (spec: RuntimeSpec) => ({
    agentRuntimeArtifact: { containerConfiguration: { containerUri: spec.containerUri } },
    roleArn: spec.roleArn ?? DEFAULT_ROLE_ARN,
    networkConfiguration: { networkMode: 'PUBLIC' },
    ...(spec.description ? { description: spec.description } : {}),
    ...(spec.environmentVariables ? { environmentVariables: spec.environmentVariables } : {}),
    ...(spec.lifecycleConfiguration ? { lifecycleConfiguration: spec.lifecycleConfiguration } : {}),
    clientToken: randomUUID(),
  });

  const client = {
    async list(): Promise<RuntimeSummary[]> {
      const all: RuntimeSummary[] = [];
      let token: string | undefined;
      do {
        const page = await call<{ agentRuntimes: RuntimeSummary[]; nextToken?: string }>(
          'POST',
          `/runtimes/${token ? `?nextToken=${encodeURIComponent(token)}` : ''}`,
        );
        all.push(...page.agentRuntimes);
        token = page.nextToken;
      } while (token);
      return all;
    },
    get: (id: string) => call<RuntimeDetail>('GET', `/runtimes/${encodeURIComponent(id)}/`),
    /** A runtime by name, id or ARN. */
    async resolve(ref: string): Promise<RuntimeSummary> {
      const found = (await client.list()).find(
        (r) => r.agentRuntimeName === ref || r.agentRuntimeId === ref || r.agentRuntimeArn === ref,
      );
      if (!found)
        throw new RuntimeClientRequestError(
          404,
          'ResourceNotFoundException',
          `No agent runtime named ${ref}`,
        );
      return found;
    },
    create: (name: string, spec: RuntimeSpec) =>
      call<{ agentRuntimeId: string; agentRuntimeArn: string; status: string }>('PUT', '/runtimes/', {
        agentRuntimeName: name,
        ...specBody(spec),
      }),
    update: (id: string, spec: RuntimeSpec) =>
      call<{ agentRuntimeVersion: string; status: string }>(
        'PUT',
        `/runtimes/${encodeURIComponent(id)}/`,
        specBody(spec),
      ),
    delete: (id: string) => call<{ status: string }>('DELETE', `/runtimes/${encodeURIComponent(id)}/`),
    /** Polls until the runtime leaves CREATING/UPDATING. */
    async waitSettled(id: string, timeoutMs = 60_000): Promise<RuntimeDetail> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const got = await client.get(id);
        if ((got.status !== 'CREATING' && got.status !== 'UPDATING') || Date.now() > deadline) return got;
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async invoke(
      arn: string,
      payload: string | Uint8Array,
      invoke: InvokeOptions = {},
    ): Promise<InvokeResult> {
      const sessionId = invoke.sessionId ?? randomUUID();
      const query = invoke.qualifier ? `?qualifier=${encodeURIComponent(invoke.qualifier)}` : '';
      const res = await fetch(`${base}/runtimes/${encodeURIComponent(arn)}/invocations${query}`, {
        method: 'POST',
        headers: headers({
          'content-type': invoke.contentType ?? 'application/json',
          ...(invoke.accept ? { accept: invoke.accept } : {}),
          [SESSION_HEADER]: sessionId,
        }),
        body: payload,
      });
      if (!res.ok) return fail(res);
      const body = res.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() });
      return {
        status: res.status,
        sessionId: res.headers.get(SESSION_HEADER) ?? sessionId,
        contentType: res.headers.get('content-type') ?? undefined,
        body,
      };
    },
    stopSession: (arn: string, sessionId: string) =>
      fetch(`${base}/runtimes/${encodeURIComponent(arn)}/stopruntimesession`, {
        method: 'POST',
        headers: headers({ 'content-type': 'application/json', [SESSION_HEADER]: sessionId }),
        body: JSON.stringify({ clientToken: randomUUID() }),
      }).then((res) => (res.ok ? undefined : fail(res))),
  };
  return client;
}

export type RuntimeClient = ReturnType<typeof createRuntimeClient>;

/**
 * The observed runtime stack of the end-to-end and browser tests: a collector and a hosting runtime
 * on 127.0.0.1 port 0 (the runtime exporting its telemetry to the collector, workers instrumented),
 * one agent runtime of a reference example created and invoked through the official AWS SDK clients.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  BedrockAgentCoreClient,
  InvokeAgentRuntimeCommand,
  type InvokeAgentRuntimeCommandInput,
} from '@aws-sdk/client-bedrock-agentcore';
import {
  BedrockAgentCoreControlClient,
  CreateAgentRuntimeCommand,
  GetAgentRuntimeCommand,
} from '@aws-sdk/client-bedrock-agentcore-control';
import { type Collector, type CollectorOptions, createCollector } from '@agentrt/collector';
import { type RuntimeServer, type RuntimeServerOptions, createRuntimeServer } from '@agentrt/runtime';

export const REPO_ROOT = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..');

export interface RuntimeStackOptions {
  /** The agent runtime's name (letters, digits, `_`). */
  name: string;
  /** Example directory under examples/ (default sdk-agent, with the offline model). */
  example?: string;
  /** An image to run instead of the example's directory (sessions in containers). */
  containerUri?: string;
  /** The agent's environment (default: the offline model, service name sdk-agent). */
  environment?: Record<string, string>;
  /** Collector options over the defaults (data dir in the stack's temp dir, 127.0.0.1 port 0). */
  collector?: Partial<CollectorOptions>;
  /**
   * Runtime options over the defaults (metrics exported every 500 ms, logs not printed), or a
   * function of the started collector giving them (its URL is the Inspector page's origin).
   */
  runtime?: Partial<RuntimeServerOptions> | ((collector: Collector) => Partial<RuntimeServerOptions>);
  /** What the example's container serves (default HTTP). */
  serverProtocol?: 'HTTP' | 'MCP' | 'A2A' | 'AGUI';
}

export interface RuntimeStack {
  dir: string;
  collector: Collector;
  runtime: RuntimeServer;
  control: BedrockAgentCoreControlClient;
  data: BedrockAgentCoreClient;
  arn: string;
  /** One InvokeAgentRuntime with a JSON (or raw) payload; resolves with the response body text. */
  invoke(
    payload: string,
    sessionId: string,
    extra?: Partial<InvokeAgentRuntimeCommandInput>,
  ): Promise<{ statusCode: number | undefined; body: string }>;
  close(): Promise<void>;
}

/** Polls `fn` until it returns something other than undefined (errors count as not yet). */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function startRuntimeStack(options: RuntimeStackOptions): Promise<RuntimeStack> {
  const dir = mkdtempSync(join(tmpdir(), `agentrt-${options.name.replace(/_/g, '-')}-`));
  const cleanups: (() => Promise<void> | void)[] = [() => rmSync(dir, { recursive: true, force: true })];
  const close = async (): Promise<void> => {
    for (const f of cleanups.splice(0).reverse()) await f();
  };
  try {
    const collector = await createCollector({
      dataDir: join(dir, 'collector'),
      host: '127.0.0.1',
      port: 0,
      ...options.collector,
    });
    cleanups.push(() => collector.close());
    const runtime = await createRuntimeServer({
      host: '127.0.0.1',
      port: 0,
      dataDir: join(dir, 'runtime'),
      otlpEndpoint: collector.url,
      instrumentWorkers: true,
      metricExportIntervalMs: 500,
      logSink: () => undefined,
      ...(typeof options.runtime === 'function' ? options.runtime(collector) : options.runtime),
    });
    cleanups.push(() => runtime.close());
    const common = {
      endpoint: runtime.url,
      region: 'us-east-1',
      credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' },
    };
    const control = new BedrockAgentCoreControlClient(common);
    const data = new BedrockAgentCoreClient({ ...common, maxAttempts: 1 });
    cleanups.push(() => {
      control.destroy();
      data.destroy();
    });
    const created = await control.send(
      new CreateAgentRuntimeCommand({
        agentRuntimeName: options.name,
        agentRuntimeArtifact: {
          containerConfiguration: {
            containerUri:
              options.containerUri ??
              pathToFileURL(join(REPO_ROOT, 'examples', options.example ?? 'sdk-agent')).href,
          },
        },
        roleArn: 'arn:aws:iam::123456789012:role/AgentRuntimeRole',
        networkConfiguration: { networkMode: 'PUBLIC' },
        ...(options.serverProtocol
          ? { protocolConfiguration: { serverProtocol: options.serverProtocol } }
          : {}),
        environmentVariables: options.environment ?? {
          AGENTRT_MODEL_PROVIDER: 'offline',
          OTEL_SERVICE_NAME: 'sdk-agent',
        },
      }),
    );
    await until('the agent runtime READY', async () => {
      const got = await control.send(new GetAgentRuntimeCommand({ agentRuntimeId: created.agentRuntimeId! }));
      return got.status === 'READY' ? true : undefined;
    });
    const arn = created.agentRuntimeArn!;
    return {
      dir,
      collector,
      runtime,
      control,
      data,
      arn,
      async invoke(payload, sessionId, extra = {}) {
        const out = await data.send(
          new InvokeAgentRuntimeCommand({
            agentRuntimeArn: arn,
            runtimeSessionId: sessionId,
            contentType: 'application/json',
            payload: new TextEncoder().encode(payload),
            ...extra,
          }),
        );
        return { statusCode: out.statusCode, body: await out.response!.transformToString() };
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A span as GET /api/traces/{id} answers it (the fields the replay tests read). */
export interface ApiSpan {
  spanId: string;
  traceId: string;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
}

/** The runtime's InvokeAgentRuntime span of a trace, once the collector has it. */
export function invocationSpanOf(collectorUrl: string, traceId: string): Promise<ApiSpan> {
  interface Node {
    span: ApiSpan;
    children: Node[];
  }
  return until(`InvokeAgentRuntime span of ${traceId}`, async () => {
    const res = await fetch(`${collectorUrl}/api/traces/${traceId}`);
    if (!res.ok) return undefined;
    const all: ApiSpan[] = [];
    const walk = (nodes: Node[]): void => {
      for (const n of nodes) {
        all.push(n.span);
        walk(n.children);
      }
    };
    walk(((await res.json()) as { roots: Node[] }).roots);
    return all.find((s) => s.attributes['rpc.method'] === 'InvokeAgentRuntime');
  });
}

/** A one-span trace sent straight to the collector (an agent's own, no runtime call); its id. */
export async function sendAgentOnlyTrace(collectorUrl: string): Promise<string> {
  const traceId = randomBytes(16).toString('hex');
  const now = BigInt(Date.now()) * 1_000_000n;
  const span = {
    traceId,
    spanId: '00000000000000a1',
    name: 'invoke_agent local',
    kind: 2,
    startTimeUnixNano: String(now),
    endTimeUnixNano: String(now + 1_000_000n),
    status: {},
  };
  const res = await fetch(`${collectorUrl}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      resourceSpans: [
        { resource: { attributes: [] }, scopeSpans: [{ scope: { name: 't' }, spans: [span] }] },
      ],
    }),
  });
  if (!res.ok) throw new Error(`collector answered ${res.status}`);
  return traceId;
}

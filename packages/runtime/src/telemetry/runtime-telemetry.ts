import { type IncomingMessage, type ServerResponse } from 'node:http';
import {
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
} from '@opentelemetry/api';
import { type AnyValueMap, type Logger as OtelLogger, SeverityNumber } from '@opentelemetry/api-logs';
import {
  AMZN_TRACE_ID_HEADER,
  CLOUD_TRACE_ID_HEADER,
  createAgentPropagator,
  endServerSpan,
} from '@agentrt/propagation';
import { OTLPLogExporter as OTLPLogExporterJson } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as OTLPLogExporterProto } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPMetricExporter as OTLPMetricExporterJson } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as OTLPMetricExporterProto } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as OTLPTraceExporterJson } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPTraceExporterProto } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { type LogRecord } from '../logger.js';
import { type StartPhaseRecorder } from '../sessions/session-manager.js';
import { EXPORTED_BY_AGENT } from '../sessions/worker-output.js';
import { DATA_PLANE_OPERATIONS } from './operations.js';
import { type CgroupFigures, type UsageSampler, createUsageSampler } from './process-usage.js';
import { RUNTIME_METRIC } from './metric-names.js';

export const RUNTIME_SERVICE_NAME = 'agentrt-runtime';
const SCOPE = '@agentrt/runtime';
/** Latency buckets (ms): sub-10 ms errors up to the 15-minute request limit. */
const LATENCY_BUCKETS_MS = [
  5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10_000, 30_000, 60_000, 120_000, 300_000,
  900_000,
];
const SEVERITY: Record<string, SeverityNumber> = {
  debug: SeverityNumber.DEBUG,
  info: SeverityNumber.INFO,
  warn: SeverityNumber.WARN,
  error: SeverityNumber.ERROR,
};

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface RuntimeTelemetryOptions {
  /** OTLP/HTTP base endpoint; without one, spans still carry the trace on but nothing is exported. */
  otlpEndpoint: string | undefined;
  otlpProtocol: OtlpProtocol;
  /** How often metrics are exported (OTEL_METRIC_EXPORT_INTERVAL). */
  metricExportIntervalMs: number;
  region: string;
  accountId: string;
}

/** What a session contributes to the runtime's metrics (a live session of the session manager). */
export interface ObservedSession {
  readonly runtimeId: string;
  readonly sessionId: string;
  readonly worker: { readonly pid: number; usage?(): CgroupFigures | undefined } | undefined;
}

/** The runtime, version and endpoint an operation acts on, once the handler has resolved them. */
export interface OperationTarget {
  runtimeArn: string;
  runtimeId: string;
  runtimeName: string;
  version?: number;
  qualifier?: string;
  protocol?: string;
}

/** One traced control- or data-plane call: its SERVER span and its metric dimensions. */
export interface Operation {
  readonly name: string;
  /** The span's context (the parent of everything the call starts). */
  readonly context: Context;
  setTarget(target: OperationTarget): void;
  setSession(sessionId: string): void;
  /** Runs a session start as a child span `StartSession`; marks the operation a cold start. */
  coldStart<T>(start: (phase: StartPhaseRecorder) => Promise<T>): Promise<T>;
  /** The trace headers to send downstream (`traceparent`, `tracestate`, X-Ray), continuing this span. */
  traceHeaders(): Record<string, string>;
  /** Records the error that failed the call (its AWS error type goes on the span and the metrics). */
  fail(error: unknown): void;
  /** Adds attributes to the call's span (the request a replay re-sends). */
  setAttributes(attributes: Attributes): void;
  /** Links the call's span to a span of another trace (the invocation a replay re-sends). */
  linkTo(traceId: string, spanId: string, attributes?: Attributes): void;
}

export interface RuntimeTelemetry {
  /**
   * Starts the SERVER span of an operation, continuing the caller's trace (traceparent, X-Amzn-Trace-Id
   * or X-Cloud-Trace-Id, baggage). It ends when the response closes, recording the status and, for
   * data-plane operations, the AgentCore runtime metrics.
   */
  /** `route` is the matched route pattern (`/runtimes/:runtime/invocations`): the span's `http.route`. */
  startOperation(
    name: string,
    req: IncomingMessage,
    res: ServerResponse,
    requestId: string,
    route?: string,
  ): Operation;
  /**
   * Starts the SERVER span of one WebSocket connection (`InvokeAgentRuntimeWithWebSocketStream`),
   * continuing the caller's trace from the upgrade request's headers. It ends with `end`: the close
   * code and the frames each way, or the status the upgrade was refused with.
   */
  startWebSocket(req: IncomingMessage, requestId: string): WebSocketOperation;
  /** Live sessions, read at each metric collection (ActiveSessionCount, CPU and memory usage). */
  observeSessions(
    list: () => readonly ObservedSession[],
    runtimeOf: (id: string) => OperationTarget | undefined,
  ): void;
  /** Exports one runtime log record as an OTLP log record, with the trace of the call it belongs to. */
  emitLog(record: LogRecord): void;
  /** Exports what is buffered (tests, shutdown). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** The AWS API name of a WebSocket connection to a runtime (its SERVER span's name). */
export const WEBSOCKET_OPERATION = 'InvokeAgentRuntimeWithWebSocketStream';

/** The attributes a WebSocket connection's span ends with. */
export const WS_ATTRIBUTES = {
  closeCode: 'agentrt.websocket.close_code',
  /** `client` or `container`: the side whose close ended the connection. */
  closedBy: 'agentrt.websocket.closed_by',
  /** Data frames from the caller to the container. */
  framesIn: 'agentrt.websocket.frames_in',
  /** Data frames from the container to the caller. */
  framesOut: 'agentrt.websocket.frames_out',
} as const;

/** One WebSocket connection: an Operation that counts frames and ends at the close. */
export interface WebSocketOperation extends Operation {
  frame(direction: 'in' | 'out'): void;
  /** Ends the span once: a bridged connection by its close, a refused upgrade by its HTTP status. */
  end(outcome: { closeCode: number; closedBy: 'client' | 'container' } | { status: number }): void;
}

/** The operation of an untraced route (the runtime's health probe): carries nothing on. */
export const UNTRACED_OPERATION: Operation = {
  name: 'untraced',
  context: ROOT_CONTEXT,
  setTarget: () => undefined,
  setSession: () => undefined,
  coldStart: (start) => start(() => undefined),
  traceHeaders: () => ({}),
  fail: () => undefined,
  setAttributes: () => undefined,
  linkTo: () => undefined,
};

interface ErrorLike {
  status?: number;
  type?: string;
}

/** A log record's fields as OTLP attributes: the session and runtime under their semantic names. */
function logAttributes(fields: Record<string, unknown>, skip: readonly string[]): AnyValueMap {
  const attributes: AnyValueMap = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined || skip.includes(key)) continue;
    const name = key === 'sessionId' ? 'session.id' : key === 'runtimeArn' ? 'cloud.resource_id' : key;
    attributes[name] =
      typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
        ? value
        : JSON.stringify(value);
  }
  return attributes;
}

/** The trace and span a worker's own log line names (`traceId`, `spanId`), when it names both. */
function loggedSpanContext(fields: Record<string, unknown>): SpanContext | undefined {
  const { traceId, spanId } = fields;
  if (typeof traceId !== 'string' || typeof spanId !== 'string') return undefined;
  return { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true };
}

/** The kind AgentCore counts an answered call as, from its HTTP status. */
export function errorKind(status: number): 'Throttles' | 'SystemErrors' | 'UserErrors' | undefined {
  if (status === 429) return 'Throttles';
  if (status >= 500) return 'SystemErrors';
  if (status >= 400) return 'UserErrors';
  return undefined;
}

/**
 * The runtime's own OpenTelemetry SDK (traces, metrics, logs; service `agentrt-runtime`). It is not
 * registered globally: the runtime may be embedded in a process that has its own SDK (tests, the CLI).
 */
export function createRuntimeTelemetry(options: RuntimeTelemetryOptions): RuntimeTelemetry {
  const resource = resourceFromAttributes({
    'service.name': RUNTIME_SERVICE_NAME,
    'cloud.provider': 'aws',
    'cloud.platform': 'aws_bedrock_agentcore',
    'cloud.region': options.region,
    'cloud.account.id': options.accountId,
  });
  const endpoint = options.otlpEndpoint?.replace(/\/+$/, '');
  const json = options.otlpProtocol === 'http/json';
  const tracerProvider = new BasicTracerProvider({
    resource,
    spanProcessors: endpoint
      ? [
          new BatchSpanProcessor(
            json
              ? new OTLPTraceExporterJson({ url: `${endpoint}/v1/traces` })
              : new OTLPTraceExporterProto({ url: `${endpoint}/v1/traces` }),
            { scheduledDelayMillis: 1000 },
          ),
        ]
      : [],
  });
  const meterProvider = new MeterProvider({
    resource,
    readers: endpoint
      ? [
          new PeriodicExportingMetricReader({
            exporter: json
              ? new OTLPMetricExporterJson({ url: `${endpoint}/v1/metrics` })
              : new OTLPMetricExporterProto({ url: `${endpoint}/v1/metrics` }),
            exportIntervalMillis: options.metricExportIntervalMs,
            exportTimeoutMillis: Math.min(30_000, options.metricExportIntervalMs),
          }),
        ]
      : [],
  });
  const loggerProvider = new LoggerProvider({
    resource,
    processors: endpoint
      ? [
          new BatchLogRecordProcessor(
            json
              ? new OTLPLogExporterJson({ url: `${endpoint}/v1/logs` })
              : new OTLPLogExporterProto({ url: `${endpoint}/v1/logs` }),
            { scheduledDelayMillis: 1000 },
          ),
        ]
      : [],
  });
  const tracer = tracerProvider.getTracer(SCOPE);
  const meter = meterProvider.getMeter(SCOPE);
  const otelLogger: OtelLogger = loggerProvider.getLogger(SCOPE);
  const propagator = createAgentPropagator();

  // AgentCore's runtime metrics, with its names; dimensions Resource (runtime ARN), Name
  // (`<runtime name>::<endpoint>`), Operation.
  const counters = {
    Invocations: meter.createCounter(RUNTIME_METRIC.invocations, {
      unit: '{call}',
      description: 'Calls to the data plane',
    }),
    Throttles: meter.createCounter(RUNTIME_METRIC.throttles, {
      unit: '{call}',
      description: 'Calls refused with 429',
    }),
    SystemErrors: meter.createCounter(RUNTIME_METRIC.systemErrors, {
      unit: '{call}',
      description: 'Calls that failed with 5xx',
    }),
    UserErrors: meter.createCounter(RUNTIME_METRIC.userErrors, {
      unit: '{call}',
      description: 'Calls that failed with 4xx other than 429 (caller or container errors, 424)',
    }),
    TotalErrors: meter.createCounter(RUNTIME_METRIC.totalErrors, {
      unit: '{call}',
      description: 'SystemErrors + UserErrors',
    }),
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

  /** Calls in flight by request id and by session id: the trace a log record belongs to. */
  const byRequest = new Map<string, SpanContext>();
  const bySession = new Map<string, SpanContext>();

  const dimensions = (target: OperationTarget | undefined, operation: string): Attributes => {
    const attrs: Attributes = { Operation: operation };
    if (target) {
      attrs.Resource = target.runtimeArn;
      attrs.Name = `${target.runtimeName}::${target.qualifier ?? 'DEFAULT'}`;
    }
    return attrs;
  };

  /**
   * The SERVER span of one call, continuing the caller's trace, and the Operation its handler sees;
   * `finish` records how the call ended and ends the span.
   */
  const begin = (name: string, req: IncomingMessage, requestId: string, extra: Attributes = {}) => {
    const receivedMs = performance.now();
    const parent = propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
    const rawPath = (req.url ?? '/').split('?')[0] ?? '/';
    const span: Span = tracer.startSpan(
      name,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'rpc.system': 'aws-api',
          'rpc.service':
            DATA_PLANE_OPERATIONS.has(name) || name === WEBSOCKET_OPERATION
              ? 'BedrockAgentCore'
              : 'BedrockAgentCoreControl',
          'rpc.method': name,
          'aws.request_id': requestId,
          'http.request.method': req.method ?? 'GET',
          'url.path': rawPath,
          ...extra,
        },
      },
      parent,
    );
    const context = trace.setSpan(parent, span);
    const spanContext = span.spanContext();
    byRequest.set(requestId, spanContext);
    const state: {
      target?: OperationTarget;
      sessionId?: string;
      failure?: ErrorLike;
      coldStart: boolean;
    } = { coldStart: false };
    const finish = (response: { statusCode: number; writableFinished: boolean }) => {
      byRequest.delete(requestId);
      if (state.sessionId !== undefined && bySession.get(state.sessionId) === spanContext)
        bySession.delete(state.sessionId);
      span.setAttribute('agentrt.cold_start', state.coldStart);
      const { failure } = state;
      if (failure?.type) span.setAttribute('error.type', failure.type);
      if (failure && (failure.status ?? 500) >= 400)
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure.type ?? 'error' });
      endServerSpan(span, response, failure !== undefined && (failure.status ?? 500) >= 400);
    };
    const operation: Operation = {
      name,
      context,
      setTarget(t) {
        state.target = t;
        span.setAttributes({
          'aws.bedrock.agentcore.runtime.arn': t.runtimeArn,
          'aws.bedrock.agentcore.runtime.id': t.runtimeId,
          'aws.bedrock.agentcore.runtime.name': t.runtimeName,
          'cloud.resource_id': t.runtimeArn,
          ...(t.version !== undefined ? { 'aws.bedrock.agentcore.runtime.version': String(t.version) } : {}),
          ...(t.qualifier !== undefined ? { 'aws.bedrock.agentcore.runtime.qualifier': t.qualifier } : {}),
          ...(t.protocol !== undefined ? { 'aws.bedrock.agentcore.runtime.protocol': t.protocol } : {}),
        });
        span.updateName(name);
      },
      setSession(id) {
        state.sessionId = id;
        span.setAttribute('session.id', id);
        bySession.set(id, spanContext);
      },
      async coldStart(start) {
        state.coldStart = true;
        const child = tracer.startSpan('StartSession', { kind: SpanKind.INTERNAL }, context);
        const childContext = trace.setSpan(context, child);
        const phase: StartPhaseRecorder = (phaseName, startMs, endMs, attributes) => {
          tracer
            .startSpan(phaseName, { kind: SpanKind.INTERNAL, startTime: startMs, attributes }, childContext)
            .end(endMs);
        };
        try {
          const result = await start(phase);
          if (state.target) sessionCount.add(1, dimensions(state.target, 'InvokeAgentRuntime'));
          return result;
        } catch (error) {
          child.recordException(error instanceof Error ? error : String(error));
          child.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
          throw error;
        } finally {
          child.end();
        }
      },
      setAttributes: (attributes) => void span.setAttributes(attributes),
      linkTo(traceId, spanId, attributes) {
        span.addLink({
          context: { traceId, spanId, traceFlags: TraceFlags.SAMPLED },
          attributes: attributes ?? {},
        });
      },
      traceHeaders() {
        const carrier: Record<string, string> = {};
        propagator.inject(context, carrier, defaultTextMapSetter);
        const out: Record<string, string> = {};
        for (const key of ['traceparent', 'tracestate', AMZN_TRACE_ID_HEADER, CLOUD_TRACE_ID_HEADER]) {
          const value = carrier[key];
          if (value !== undefined) out[key] = value;
        }
        return out;
      },
      fail(error) {
        const e = (error ?? {}) as ErrorLike;
        state.failure = {
          status: typeof e.status === 'number' ? e.status : 500,
          type: e.type ?? 'InternalServerException',
        };
        if (error instanceof Error) span.recordException(error);
      },
    };
    return { span, operation, state, finish, receivedMs };
  };

  const startOperation = (
    name: string,
    req: IncomingMessage,
    res: ServerResponse,
    requestId: string,
    route?: string,
  ): Operation => {
    const { operation, state, finish, receivedMs } = begin(
      name,
      req,
      requestId,
      route === undefined ? {} : { 'http.route': route },
    );
    res.once('close', () => {
      const { failure, target } = state;
      const status = res.headersSent ? res.statusCode : (failure?.status ?? res.statusCode);
      finish(res);
      if (!DATA_PLANE_OPERATIONS.has(name)) return;
      const attrs = dimensions(target, name);
      // A stream the runtime had to cut off (the worker died after the headers) is a system error.
      // A call answered in a protocol's own error shape (JSON-RPC) counts by its AWS error's status.
      const answered = failure?.status ?? (res.writableFinished ? status : 500);
      const kind = errorKind(answered);
      counters.Invocations.add(1, attrs);
      counters.Throttles.add(kind === 'Throttles' ? 1 : 0, attrs);
      counters.SystemErrors.add(kind === 'SystemErrors' ? 1 : 0, attrs);
      counters.UserErrors.add(kind === 'UserErrors' ? 1 : 0, attrs);
      counters.TotalErrors.add(kind === 'SystemErrors' || kind === 'UserErrors' ? 1 : 0, attrs);
      latency.record(performance.now() - receivedMs, attrs);
    });
    return operation;
  };

  const startWebSocket = (req: IncomingMessage, requestId: string): WebSocketOperation => {
    const { span, operation, state, finish } = begin(WEBSOCKET_OPERATION, req, requestId, {
      'network.protocol.name': 'websocket',
    });
    const frames = { in: 0, out: 0 };
    let ended = false;
    return {
      ...operation,
      frame(direction) {
        frames[direction]++;
      },
      end(outcome) {
        if (ended) return;
        ended = true;
        if ('closeCode' in outcome) {
          span.setAttributes({
            [WS_ATTRIBUTES.closeCode]: outcome.closeCode,
            [WS_ATTRIBUTES.closedBy]: outcome.closedBy,
            [WS_ATTRIBUTES.framesIn]: frames.in,
            [WS_ATTRIBUTES.framesOut]: frames.out,
          });
          // A connection the bridge had to cut (1011: abnormal end, 1009: oversized frame) failed.
          if (outcome.closeCode === 1011 || outcome.closeCode === 1009)
            span.setStatus({ code: SpanStatusCode.ERROR, message: `closed with ${outcome.closeCode}` });
          finish({ statusCode: 101, writableFinished: true });
        } else finish({ statusCode: state.failure?.status ?? outcome.status, writableFinished: true });
      },
    };
  };

  let usage: UsageSampler | undefined;
  const observeSessions: RuntimeTelemetry['observeSessions'] = (list, runtimeOf) => {
    usage = createUsageSampler();
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
        const samples = usage!.sample(
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

  const emitLog = (record: LogRecord): void => {
    if (record[EXPORTED_BY_AGENT] === true) return; // the worker exported it itself
    const { time, level, msg, ...fields } = record;
    const logged = loggedSpanContext(fields);
    const attributes = logAttributes(fields, logged ? ['traceId', 'spanId'] : []);
    const requestId = typeof fields.requestId === 'string' ? fields.requestId : undefined;
    const sessionId = typeof fields.sessionId === 'string' ? fields.sessionId : undefined;
    const spanContext =
      logged ??
      (requestId !== undefined ? byRequest.get(requestId) : undefined) ??
      (sessionId !== undefined ? bySession.get(sessionId) : undefined);
    otelLogger.emit({
      timestamp: new Date(time),
      severityNumber: SEVERITY[level] ?? SeverityNumber.INFO,
      severityText: level.toUpperCase(),
      body: msg,
      attributes,
      ...(spanContext ? { context: trace.setSpanContext(ROOT_CONTEXT, spanContext) } : {}),
    });
  };

  const flush = async (): Promise<void> => {
    await Promise.allSettled([
      tracerProvider.forceFlush(),
      meterProvider.forceFlush(),
      loggerProvider.forceFlush(),
    ]);
  };

  let closed: Promise<void> | undefined;
  return {
    startOperation,
    startWebSocket,
    observeSessions,
    emitLog,
    flush,
    close: () =>
      (closed ??= (async () => {
        // A collector that is down must not hold the runtime's shutdown: each provider's export has
        // its own timeout, and failures are only the exporters' (diag) business.
        await Promise.allSettled([
          tracerProvider.shutdown(),
          meterProvider.shutdown(),
          loggerProvider.shutdown(),
        ]);
      })()),
  };
}

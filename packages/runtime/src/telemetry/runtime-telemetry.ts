import { type IncomingMessage, type ServerResponse } from 'node:http';
import { type SpanContext, SpanStatusCode } from '@opentelemetry/api';
import { type Logger as OtelLogger } from '@opentelemetry/api-logs';
import { createAgentPropagator } from '@agentrt/propagation';
import { type LogRecord } from '../logger.js';
import {
  type Operation,
  type OperationTarget,
  WEBSOCKET_OPERATION,
  WS_ATTRIBUTES,
  type WebSocketOperation,
} from './operation.js';
import { DATA_PLANE_OPERATIONS } from './operations.js';
import { type RuntimeTelemetryOptions, createOtlpProviders } from './otlp-providers.js';
import { createLogEmitter } from './runtime-logs.js';
import { type ObservedSession, createRuntimeMetrics } from './runtime-metrics.js';
import { createServerSpans } from './server-span.js';

const SCOPE = '@agentrt/runtime';

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

/**
 * The runtime's own OpenTelemetry SDK (traces, metrics, logs; service `agentrt-runtime`). It is not
 * registered globally: the runtime may be embedded in a process that has its own SDK (tests, the CLI).
 */
export function createRuntimeTelemetry(options: RuntimeTelemetryOptions): RuntimeTelemetry {
  const { tracerProvider, meterProvider, loggerProvider } = createOtlpProviders(options);
  const metrics = createRuntimeMetrics(meterProvider.getMeter(SCOPE));
  const otelLogger: OtelLogger = loggerProvider.getLogger(SCOPE);
  /** Calls in flight by request id and by session id: the trace a log record belongs to. */
  const calls = { byRequest: new Map<string, SpanContext>(), bySession: new Map<string, SpanContext>() };
  const begin = createServerSpans({
    tracer: tracerProvider.getTracer(SCOPE),
    propagator: createAgentPropagator(),
    calls,
    onSessionStarted: metrics.countSessionStart,
  });

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
      // A stream the runtime had to cut off (the worker died after the headers) is a system error.
      // A call answered in a protocol's own error shape (JSON-RPC) counts by its AWS error's status.
      const answered = failure?.status ?? (res.writableFinished ? status : 500);
      metrics.recordCall(name, target, answered, performance.now() - receivedMs);
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
    observeSessions: metrics.observeSessions,
    emitLog: createLogEmitter(otelLogger, calls),
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

// The SERVER span of one call of the runtime's API, continuing the caller's trace (traceparent,
// X-Amzn-Trace-Id or X-Cloud-Trace-Id, baggage), and the Operation its handler sees.
import { type IncomingMessage } from 'node:http';
import {
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
  type TextMapPropagator,
  type Tracer,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
} from '@opentelemetry/api';
import { AMZN_TRACE_ID_HEADER, CLOUD_TRACE_ID_HEADER, endServerSpan } from '@agentrt/propagation';
import { type StartPhaseRecorder } from '../sessions/session.js';
import { type Operation, type OperationTarget, WEBSOCKET_OPERATION } from './operation.js';
import { DATA_PLANE_OPERATIONS } from './operations.js';
import { type CallsInFlight } from './runtime-logs.js';

interface ErrorLike {
  status?: number;
  type?: string;
}

/** What the call's handler set on its Operation, read when the call ends. */
export interface CallState {
  target?: OperationTarget;
  sessionId?: string;
  failure?: ErrorLike;
  coldStart: boolean;
}

export interface ServerSpansOptions {
  tracer: Tracer;
  propagator: TextMapPropagator;
  /** Filled while calls are in flight: the trace a log record belongs to. */
  calls: CallsInFlight;
  /** A session started for a call (its SessionCount). */
  onSessionStarted: (target: OperationTarget) => void;
}

/** The span's attributes naming the runtime, version, endpoint and protocol the call acts on. */
function targetAttributes(t: OperationTarget): Attributes {
  return {
    'aws.bedrock.agentcore.runtime.arn': t.runtimeArn,
    'aws.bedrock.agentcore.runtime.id': t.runtimeId,
    'aws.bedrock.agentcore.runtime.name': t.runtimeName,
    'cloud.resource_id': t.runtimeArn,
    ...(t.version !== undefined ? { 'aws.bedrock.agentcore.runtime.version': String(t.version) } : {}),
    ...(t.qualifier !== undefined ? { 'aws.bedrock.agentcore.runtime.qualifier': t.qualifier } : {}),
    ...(t.protocol !== undefined ? { 'aws.bedrock.agentcore.runtime.protocol': t.protocol } : {}),
  };
}

/** The trace headers to send downstream (`traceparent`, `tracestate`, X-Ray), continuing `context`. */
function traceHeadersOf(propagator: TextMapPropagator, context: Context): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagator.inject(context, carrier, defaultTextMapSetter);
  const out: Record<string, string> = {};
  for (const key of ['traceparent', 'tracestate', AMZN_TRACE_ID_HEADER, CLOUD_TRACE_ID_HEADER]) {
    const value = carrier[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** The failure a handler's error records: its AWS status and type (500 InternalServerException). */
function failureOf(error: unknown): ErrorLike {
  const e = (error ?? {}) as ErrorLike;
  return {
    status: typeof e.status === 'number' ? e.status : 500,
    type: e.type ?? 'InternalServerException',
  };
}

/** Ends the span with how the call ended: cold start, error type and status. */
function endCallSpan(
  span: Span,
  state: CallState,
  response: { statusCode: number; writableFinished: boolean },
) {
  span.setAttribute('agentrt.cold_start', state.coldStart);
  const { failure } = state;
  if (failure?.type) span.setAttribute('error.type', failure.type);
  const failed = failure !== undefined && (failure.status ?? 500) >= 400;
  if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message: failure.type ?? 'error' });
  endServerSpan(span, response, failed);
}

export function createServerSpans({ tracer, propagator, calls, onSessionStarted }: ServerSpansOptions) {
  /** The call's SERVER span, a child of the caller's trace. */
  const startSpan = (name: string, req: IncomingMessage, requestId: string, extra: Attributes) => {
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
    return { span, context: trace.setSpan(parent, span) };
  };

  /** A session start as the child span `StartSession`, its steps as its children. */
  const coldStart = async <T>(
    context: Context,
    state: CallState,
    start: (phase: StartPhaseRecorder) => Promise<T>,
  ): Promise<T> => {
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
      if (state.target) onSessionStarted(state.target);
      return result;
    } catch (error) {
      child.recordException(error instanceof Error ? error : String(error));
      child.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      child.end();
    }
  };

  /** The Operation a handler sees of its call's span. */
  const operationOf = (name: string, span: Span, context: Context, state: CallState): Operation => ({
    name,
    context,
    setTarget(t) {
      state.target = t;
      span.setAttributes(targetAttributes(t));
      span.updateName(name);
    },
    setSession(id) {
      state.sessionId = id;
      span.setAttribute('session.id', id);
      calls.bySession.set(id, span.spanContext());
    },
    coldStart: (start) => coldStart(context, state, start),
    setAttributes: (attributes) => void span.setAttributes(attributes),
    linkTo(traceId, spanId, attributes) {
      span.addLink({
        context: { traceId, spanId, traceFlags: TraceFlags.SAMPLED },
        attributes: attributes ?? {},
      });
    },
    traceHeaders: () => traceHeadersOf(propagator, context),
    fail(error) {
      state.failure = failureOf(error);
      if (error instanceof Error) span.recordException(error);
    },
  });

  /**
   * The SERVER span of one call, continuing the caller's trace, and the Operation its handler sees;
   * `finish` records how the call ended and ends the span.
   */
  return (name: string, req: IncomingMessage, requestId: string, extra: Attributes = {}) => {
    const receivedMs = performance.now();
    const { span, context } = startSpan(name, req, requestId, extra);
    const spanContext: SpanContext = span.spanContext();
    calls.byRequest.set(requestId, spanContext);
    const state: CallState = { coldStart: false };
    const finish = (response: { statusCode: number; writableFinished: boolean }) => {
      calls.byRequest.delete(requestId);
      if (state.sessionId !== undefined && calls.bySession.get(state.sessionId) === spanContext)
        calls.bySession.delete(state.sessionId);
      endCallSpan(span, state, response);
    };
    return { span, operation: operationOf(name, span, context, state), state, finish, receivedMs };
  };
}

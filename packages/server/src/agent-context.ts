import {
  type Context as OtelContext,
  INVALID_SPAN_CONTEXT,
  ProxyTracerProvider,
  createContextKey,
  type Span,
  type TextMapPropagator,
  type TracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  context,
  defaultTextMapGetter,
  isSpanContextValid,
  propagation,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { RPCType, getRPCMetadata } from '@opentelemetry/core';
import {
  BAGGAGE_HEADER,
  SESSION_ID_BAGGAGE_KEY,
  SESSION_ID_HEADERS,
  TRACEPARENT_HEADER,
  TRACE_ID_HEADERS,
  createAgentPropagator,
  endServerSpan,
  isValidSessionId,
  readSessionId,
} from '@agentrt/propagation';
import type { Context as KoaContext, Middleware } from 'koa';
import { type Logger, diagLogger } from './logger.js';

/** The tracer name of the server spans. */
export const TRACER_NAME = '@agentrt/server';

/** Options of {@link agentContext}. */
export interface AgentContextOptions {
  /** How headers become context. Default: `createAgentPropagator()` from `@agentrt/propagation`. */
  propagator?: TextMapPropagator;
  /** Where server spans come from. Default: the global tracer provider (a no-op until one is registered). */
  tracerProvider?: TracerProvider;
  /**
   * Which requests get context and a server span. Default: every request except `GET /ping`
   * (health checks are neither traced nor logged).
   */
  traceRequest?: (ctx: KoaContext) => boolean;
  /** Where malformed-header notes go (at debug level). Default: OpenTelemetry `diag`. */
  logger?: Logger;
  /**
   * When no OpenTelemetry SDK is registered at the first request, register what the middleware needs
   * to work on its own: an AsyncLocalStorage context manager and, unless one is set, the agentrt
   * propagator (W3C trace context and baggage, X-Ray, the session header), and say so once on
   * stderr. Then `getActiveSessionId()` and outgoing instrumented calls see the request's context
   * without the `@agentrt/instrument` preload. Default true; `createApp()` passes false (its
   * entrypoint gets the session in its context argument).
   */
  setUpContext?: boolean;
}

/** What {@link agentContext} found, kept on `ctx.state.agentrt` for later middleware. */
export interface AgentContextState {
  /** The OpenTelemetry context the rest of the chain runs in. */
  readonly otelContext: OtelContext;
  /** The session id (baggage `session.id`, else the session header), when valid. */
  readonly sessionId: string | undefined;
  /** The request's server span: ours, or the one an HTTP auto-instrumentation already started. */
  readonly span: Span;
  /** True when this middleware started (and will end) the span. */
  readonly ownsSpan: boolean;
  /**
   * False when no OpenTelemetry SDK is registered (no context manager, no tracer provider): then no
   * span is recorded, nothing needs to be made active (nothing could observe it), and unless trace or
   * baggage headers were sent, `otelContext` is only extracted when first read.
   */
  readonly telemetry: boolean;
}

/** The state {@link agentContext} left on a Koa context, if it ran for this request. */
export function getAgentContextState(ctx: KoaContext): AgentContextState | undefined {
  return (ctx.state as { agentrt?: AgentContextState }).agentrt;
}

/** The session id of the active OpenTelemetry context (baggage `session.id`), if any. */
export function getActiveSessionId(): string | undefined {
  const value = propagation.getActiveBaggage()?.getEntry(SESSION_ID_BAGGAGE_KEY)?.value;
  return isValidSessionId(value) ? value : undefined;
}

const isPing = (ctx: KoaContext): boolean => ctx.path === '/ping';

/**
 * Koa middleware that puts the incoming trace and session headers into the active OpenTelemetry
 * context for everything downstream: `X-Cloud-Trace-Id`/`X-Amzn-Trace-Id`, `traceparent`/`tracestate`,
 * `baggage`, and the session header (as baggage `session.id`). Each request (except `/ping`) is one
 * SERVER span carrying `session.id`, unless an HTTP auto-instrumentation already started the server
 * span, in which case that span gets the attributes instead. Malformed headers are ignored with a
 * debug note; this middleware never fails a request.
 */
export function agentContext(options: AgentContextOptions = {}): Middleware {
  const propagator = options.propagator ?? createAgentPropagator();
  const traceRequest = options.traceRequest ?? ((ctx: KoaContext) => !isPing(ctx));
  const logger = options.logger ?? diagLogger;
  const tracer = (options.tracerProvider ?? trace).getTracer(TRACER_NAME);
  let checkedSetUp = options.setUpContext === false;
  let sdkSeen = false;

  return async function agentContextMiddleware(ctx, next) {
    if (!traceRequest(ctx)) return next();
    if (!checkedSetUp) {
      checkedSetUp = true;
      setUpContextWithoutSdk(propagator);
    }
    const headers = ctx.req.headers;
    // once an SDK is seen it stays (its shutdown leaves the general path below still correct)
    const sdk = options.tracerProvider !== undefined || sdkSeen || (sdkSeen = telemetryActive());
    if (!sdk && !hasContextHeaders(headers)) {
      // No SDK and only (at most) a session header: the session id is all there is to know. The
      // context is extracted only if someone asks for it.
      const sessionId = readSessionId(headers);
      if (sessionId === undefined) noteIgnoredHeaders(headers, ROOT_CONTEXT, false, logger);
      const state = new LazyAgentContextState(propagator, headers, sessionId);
      (ctx.state as { agentrt?: AgentContextState }).agentrt = state;
      return next();
    }
    const active = context.active();
    const upstream = upstreamServerSpan(active);
    let otelContext: OtelContext;
    let extracted: OtelContext;
    let span: Span;
    if (upstream) {
      // The HTTP instrumentation already extracted the trace parent into its span. When its
      // propagator also put a session id into the baggage (@agentrt/instrument's does), the
      // context is complete; otherwise merge in what ours finds (baggage, session header), leaving
      // the span we did not create as it is.
      span = upstream;
      if (isValidSessionId(propagation.getBaggage(active)?.getEntry(SESSION_ID_BAGGAGE_KEY)?.value)) {
        extracted = otelContext = active;
      } else {
        extracted = propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
        otelContext = mergeBaggage(active, extracted);
      }
    } else {
      const parent = (extracted = propagator.extract(active, headers, defaultTextMapGetter));
      span = tracer.startSpan(
        ctx.method,
        {
          kind: SpanKind.SERVER,
          attributes: {
            'http.request.method': ctx.method,
            'url.path': ctx.path,
            'url.scheme': ctx.protocol,
          },
        },
        parent,
      );
      otelContext = trace.setSpan(parent, span);
    }
    const baggageSession = propagation.getBaggage(otelContext)?.getEntry(SESSION_ID_BAGGAGE_KEY)?.value;
    // The propagator already copied a valid session header into baggage; the header is read again
    // only when the caller's own baggage session.id was unusable.
    const sessionId = isValidSessionId(baggageSession) ? baggageSession : readSessionId(headers);
    if (sessionId !== undefined) span.setAttribute(SESSION_ID_BAGGAGE_KEY, sessionId);
    noteIgnoredHeaders(headers, extracted, sessionId !== undefined, logger);
    const state: AgentContextState = { otelContext, sessionId, span, ownsSpan: !upstream, telemetry: sdk };
    (ctx.state as { agentrt?: AgentContextState }).agentrt = state;

    if (!upstream) ctx.res.once('close', () => endSpan(ctx, span));
    await context.with(otelContext, next);
    // Our own span is named when it ends (endSpan); a span we did not make may have ended already
    // if the client went away (then setRoute named it through the RPC metadata).
    if (upstream && span.isRecording()) nameRoute(ctx, span);
  };
}

/**
 * Records the route a request matched (`ctx._matchedRoute`, as koa-router names it) and hands it
 * to the HTTP server span's RPC metadata, so an HTTP instrumentation names its span by route even
 * when the span ends before the handler returns (the client went away).
 */
export function setRoute(ctx: KoaContext, route: string): void {
  (ctx as KoaContext & { _matchedRoute?: string })._matchedRoute = route;
  const rpc = getRPCMetadata(context.active());
  if (rpc?.type === RPCType.HTTP) rpc.route = route;
}

function nameRoute(ctx: KoaContext, span: Span): void {
  const route = matchedRoute(ctx);
  if (route !== undefined) {
    span.setAttribute('http.route', route);
    span.updateName(`${ctx.method} ${route}`);
  }
}

const NOOP_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();
const PROBE = ROOT_CONTEXT.setValue(createContextKey('@agentrt/server probe'), true);
const NON_RECORDING_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * The state when no SDK is registered. A class rather than an object literal with a getter: a
 * literal with a getter closure gets a new hidden class per request, which V8 keeps in old space,
 * and the per-request garbage then costs full collections (measured: about a third more CPU per
 * request than bare Koa).
 */
class LazyAgentContextState implements AgentContextState {
  readonly span = NON_RECORDING_SPAN;
  readonly ownsSpan = false;
  readonly telemetry = false;
  #otelContext: OtelContext | undefined;

  constructor(
    private readonly propagator: TextMapPropagator,
    private readonly headers: Readonly<Record<string, string | string[] | undefined>>,
    readonly sessionId: string | undefined,
  ) {}

  get otelContext(): OtelContext {
    return (this.#otelContext ??= this.propagator.extract(ROOT_CONTEXT, this.headers, defaultTextMapGetter));
  }
}

/**
 * True when an OpenTelemetry SDK is in place: a context manager (the probe context becomes active)
 * or a tracer provider behind the global proxy. Checked per request until it is true, because an
 * SDK may be registered after the app was built; then no more (the probe enters a context).
 */
function telemetryActive(): boolean {
  if (context.with(PROBE, () => context.active()) === PROBE) return true;
  const provider = trace.getTracerProvider();
  const delegate = provider instanceof ProxyTracerProvider ? provider.getDelegate() : provider;
  return delegate !== NOOP_TRACER_PROVIDER;
}

let standaloneNoticeShown = false;

/**
 * With no context manager registered (no SDK), registers an AsyncLocalStorage one, and the agentrt
 * propagator when the global one is the no-op; says so once per process. Does nothing when an SDK
 * (or anyone) already registered a context manager.
 */
function setUpContextWithoutSdk(propagator: TextMapPropagator): void {
  if (context.with(PROBE, () => context.active()) === PROBE) return;
  const registered = context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const withPropagator = propagation.fields().length === 0 && propagation.setGlobalPropagator(propagator);
  if (registered && !standaloneNoticeShown) {
    standaloneNoticeShown = true;
    process.stderr.write(
      '@agentrt/server: no OpenTelemetry SDK is registered, so agentContext() registered an ' +
        `AsyncLocalStorage context manager${withPropagator ? ' and the agentrt propagator (W3C trace context, baggage, X-Ray, session header)' : ''}; ` +
        'getActiveSessionId() and outgoing calls now see each request. For spans and export, start the ' +
        'app with --require @agentrt/instrument.\n',
    );
  }
}

function hasContextHeaders(headers: Readonly<Record<string, unknown>>): boolean {
  return headers[BAGGAGE_HEADER] !== undefined || anySent(headers, TRACE_HEADERS);
}

function upstreamServerSpan(active: OtelContext): Span | undefined {
  const rpc = getRPCMetadata(active);
  // An HTTP server instrumentation's span counts even when it is not recording (sampled out, or
  // OTEL_TRACES_SAMPLER=always_off): the request already has its SERVER span and trace, and a second
  // one here would be a new extract and span on every request that record nothing (or, with a
  // ratio sampler, a SERVER span in a trace whose root was dropped).
  if (rpc?.type === RPCType.HTTP) return rpc.span;
  const span = trace.getSpan(active);
  return span?.isRecording() ? span : undefined;
}

function mergeBaggage(base: OtelContext, extracted: OtelContext): OtelContext {
  const incoming = propagation.getBaggage(extracted);
  if (!incoming) return base;
  let merged = propagation.getBaggage(base) ?? propagation.createBaggage();
  for (const [key, entry] of incoming.getAllEntries()) {
    if (!merged.getEntry(key)) merged = merged.setEntry(key, entry);
  }
  return propagation.setBaggage(base, merged);
}

function endSpan(ctx: KoaContext, span: Span): void {
  nameRoute(ctx, span);
  endServerSpan(span, ctx.res);
}

function matchedRoute(ctx: KoaContext): string | undefined {
  const route = (ctx as KoaContext & { _matchedRoute?: unknown })._matchedRoute;
  return typeof route === 'string' ? route : undefined;
}

function noteIgnoredHeaders(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  extracted: OtelContext,
  sessionHeaderValid: boolean,
  logger: Logger,
): void {
  // The headers are looked at first: a request that sent none has nothing to note, and the
  // parent's ids are only checked (two regular expressions) when a trace header was sent.
  if (anySent(headers, TRACE_HEADERS) && !hasValidParent(extracted)) {
    logger.debug('ignored malformed trace headers', {
      headers: TRACE_HEADERS.filter((n) => headers[n] !== undefined),
    });
  }
  if (!sessionHeaderValid) {
    const sent = SESSION_ID_HEADERS.filter((name) => headers[name] !== undefined);
    if (sent.length > 0) logger.debug('ignored malformed session id header', { headers: sent });
  }
  if (headers[BAGGAGE_HEADER] !== undefined && propagation.getBaggage(extracted) === undefined) {
    logger.debug('ignored malformed baggage header');
  }
}

const TRACE_HEADERS = [...TRACE_ID_HEADERS, TRACEPARENT_HEADER];

function anySent(headers: Readonly<Record<string, unknown>>, names: readonly string[]): boolean {
  for (const name of names) if (headers[name] !== undefined) return true;
  return false;
}

function hasValidParent(extracted: OtelContext): boolean {
  const parent = trace.getSpanContext(extracted);
  return parent !== undefined && isSpanContextValid(parent);
}

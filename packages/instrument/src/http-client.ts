import type { ClientRequest, IncomingMessage } from 'node:http';
import { errorMonitor } from 'node:events';
import diagnosticsChannel from 'node:diagnostics_channel';
import {
  type Attributes,
  type Histogram,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapSetter,
  context,
  propagation,
  trace,
} from '@opentelemetry/api';
import { type InstrumentationConfig, InstrumentationBase } from '@opentelemetry/instrumentation';
import { normalizedMethod } from './fetch-client.js';
import { httpDurationHistogram, untracedPaths } from './http-server.js';
import { VERSION } from './version.js';

// Outgoing `http`/`https` requests as CLIENT spans, from Node's diagnostics channels instead of
// wrapping `http.request`/`http.get` (lean mode; the otel mode keeps the upstream
// @opentelemetry/instrumentation-http). The span and the `http.client.request.duration`
// histogram are what instrumentation-http 0.223 makes (stable HTTP semantic conventions only):
// name = method; http.request.method, server.address, server.port, url.full (its query redaction),
// user_agent.original; on the response http.response.status_code, network.peer.address/port,
// network.protocol.version; ERROR for a status >= 400, an aborted response or an error (with
// error.type and the exception event); the caller's context injected into the request headers.
// What a ClientRequest no longer knows is listed in the README (the case of a lower-case method).

/** Configuration of {@link HttpClientInstrumentation}. */
export interface HttpClientInstrumentationConfig extends InstrumentationConfig {
  /** Requests (by path, without the query) that get no span and no propagation headers. */
  untracedPaths?: readonly string[];
}

/** The instrumentation scope of the client spans. */
export const HTTP_CLIENT_SCOPE = '@agentrt/instrument/http-client';

/** Query parameters instrumentation-http redacts in `url.full` (its DEFAULT_QUERY_STRINGS_TO_REDACT). */
const UPSTREAM_REDACTED_QUERY = [
  'sig',
  'Signature',
  'AWSAccessKeyId',
  'X-Goog-Signature',
  'X-Amz-Signature',
  'X-Amz-Credential',
  'X-Amz-Security-Token',
];

/** One outgoing request's telemetry, kept on the request under {@link STATE}. */
interface ClientState {
  readonly span: Span;
  readonly started: number;
  readonly metric: Attributes;
  done: boolean;
}

const STATE = Symbol('agentrt.httpClient');
type TracedRequest = ClientRequest & { [STATE]?: ClientState; _header?: string | null };

const headerSetter: TextMapSetter<ClientRequest> = {
  set: (request, key, value) => request.setHeader(key, value),
};

/** Node's `host[:port]` of a request (ClientRequest's own kAuthority symbol, else the Host header). */
let authoritySymbol: symbol | null | undefined;
function authorityOf(request: ClientRequest): string | undefined {
  if (authoritySymbol === undefined) {
    authoritySymbol =
      Object.getOwnPropertySymbols(request).find((s) => s.description === 'kAuthority') ?? null;
  }
  const own =
    authoritySymbol === null ? undefined : (request as unknown as Record<symbol, unknown>)[authoritySymbol];
  if (typeof own === 'string') return own;
  const host = request.getHeader('host');
  return typeof host === 'string' ? host : undefined;
}

/** The port the request goes to: the authority's, else the agent's default (80/443). */
function portOf(request: ClientRequest): number {
  const authority = authorityOf(request);
  if (authority !== undefined) {
    const colon = authority.lastIndexOf(':');
    if (colon > authority.lastIndexOf(']')) {
      const port = Number(authority.slice(colon + 1));
      if (Number.isInteger(port)) return port;
    }
  }
  const agent = (request as { agent?: { defaultPort?: number } }).agent;
  return agent?.defaultPort ?? (request.protocol === 'https:' ? 443 : 80);
}

/** instrumentation-http's `url.full`: default ports dropped, its query parameters redacted. */
export function upstreamUrlFull(protocol: string, host: string, port: number, path: string): string {
  const withPort = !host.includes(':') && port !== 80 && port !== 443 ? `${host}:${port}` : host;
  if (!path.includes('?')) return `${protocol}//${withPort}${path}`;
  try {
    const parsed = new URL(path, 'http://localhost');
    for (const param of UPSTREAM_REDACTED_QUERY) {
      if (parsed.searchParams.has(param)) parsed.searchParams.set(param, 'REDACTED');
    }
    return `${protocol}//${withPort}${parsed.pathname}?${parsed.searchParams.toString()}`;
  } catch {
    return `${protocol}//${withPort}${path}`;
  }
}

/** The span attributes known when the request is created. */
function requestAttributes(request: ClientRequest, method: string, port: number): Attributes {
  const attributes: Attributes = {
    'http.request.method': method,
    'server.address': request.host,
    'server.port': port,
    'url.full': upstreamUrlFull(request.protocol, request.host, port, request.path),
  };
  if (method !== request.method) attributes['http.request.method_original'] = request.method;
  const agent = request.getHeader('user-agent');
  if (agent !== undefined) attributes['user_agent.original'] = agent as string;
  return attributes;
}

/**
 * CLIENT spans and the client duration histogram for outgoing `http`/`https` requests, subscribed
 * to `http.client.request.created` (span, headers injected before they are sent),
 * `http.client.response.finish` (status, peer) and `http.client.request.error`. A request the
 * sampler drops costs the propagation headers and one histogram record, nothing else.
 */
export class HttpClientInstrumentation extends InstrumentationBase<HttpClientInstrumentationConfig> {
  declare private duration: Histogram | undefined;
  declare private isUntraced: (url: string) => boolean;
  // Set by enable(), which the base class's constructor calls before this class's fields exist.
  declare private handlers: Record<string, (message: unknown) => void> | undefined;

  constructor(config: HttpClientInstrumentationConfig = {}) {
    super(HTTP_CLIENT_SCOPE, VERSION, config);
  }

  protected init() {
    return [];
  }

  protected override _updateMetricInstruments(): void {
    this.duration = httpDurationHistogram(
      this.meter,
      'http.client.request.duration',
      'Duration of HTTP client requests.',
    );
  }

  override enable(): void {
    super.enable();
    this.isUntraced = untracedPaths(this.getConfig().untracedPaths);
    this.handlers ??= {
      'http.client.request.created': (m) => this.created((m as { request: TracedRequest }).request),
      'http.client.response.finish': (m) => {
        const { request, response } = m as { request: TracedRequest; response: IncomingMessage };
        this.response(request, response);
      },
      'http.client.request.error': (m) => {
        const { request, error } = m as { request: TracedRequest; error: Error };
        const state = request[STATE];
        if (state !== undefined) this.fail(state, error);
      },
    };
    for (const [name, handler] of Object.entries(this.handlers)) diagnosticsChannel.subscribe(name, handler);
  }

  override disable(): void {
    super.disable();
    for (const [name, handler] of Object.entries(this.handlers ?? {})) {
      diagnosticsChannel.unsubscribe(name, handler);
    }
  }

  private created(request: TracedRequest): void {
    if (this.isUntraced(request.path)) return;
    const method = normalizedMethod(request.method);
    const port = portOf(request);
    const parent = context.active();
    const span = this.tracer.startSpan(request.method, { kind: SpanKind.CLIENT }, parent);
    if (span.isRecording()) span.setAttributes(requestAttributes(request, method, port));
    if (!request._header) propagation.inject(trace.setSpan(parent, span), request, headerSetter);
    const metric: Attributes = {
      'http.request.method': method,
      'server.address': request.host,
      'server.port': port,
    };
    const state: ClientState = { span, started: performance.now(), metric, done: false };
    request[STATE] = state;
    // instrumentation-http's rule: a request closed before its response ended ends the span,
    // unless it was aborted (abort() emits no error).
    request.once('close', () => {
      if (!(request as { aborted?: boolean }).aborted) this.end(state);
    });
  }

  private response(request: TracedRequest, response: IncomingMessage): void {
    const state = request[STATE];
    if (state === undefined) return;
    const { span, metric } = state;
    const status = response.statusCode ?? 0;
    const socket = response.socket;
    if (span.isRecording()) {
      if (response.statusCode != null) span.setAttribute('http.response.status_code', status);
      if (socket) {
        span.setAttributes({
          'network.peer.address': socket.remoteAddress,
          'network.peer.port': socket.remotePort,
          'network.protocol.version': response.httpVersion,
        });
      }
    }
    if (socket && response.httpVersion) metric['network.protocol.version'] = response.httpVersion;
    if (status) {
      metric['http.response.status_code'] = status;
      if (status >= 400 && status < 600) metric['error.type'] ??= String(status);
    }
    response.once('end', () => {
      if (state.done) return;
      const failed = (response.aborted && !response.complete) || !(status >= 100 && status < 400);
      if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
      this.end(state);
    });
    response.on(errorMonitor, (error: Error) => this.fail(state, error));
  }

  /** instrumentation-http's error: error.type, ERROR with the message, the exception event. */
  private fail(state: ClientState, error: Error): void {
    if (state.done) return;
    const { span } = state;
    span.setAttribute('error.type', error.name);
    span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    span.recordException(error);
    state.metric['error.type'] = error.name;
    this.end(state);
  }

  private end(state: ClientState): void {
    if (state.done) return;
    state.done = true;
    state.span.end();
    this.duration?.record((performance.now() - state.started) / 1000, state.metric);
  }
}

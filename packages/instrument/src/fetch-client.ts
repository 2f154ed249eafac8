import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  type Attributes,
  type Context,
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
import { httpDurationHistogram, untracedPaths } from './http-server.js';
import { VERSION } from './version.js';

// Outgoing fetch()/undici requests as CLIENT spans, the way @opentelemetry/instrumentation-undici
// makes them (same diagnostics channels, span name, kind, attributes, status, propagation headers and
// `http.client.request.duration` histogram) for less work per request. On the reference agent the
// upstream one, with the sampler off, cost more CPU than the rest of the SDK together
// (bench/instrument): per request it parses `request.origin + request.path` with `new URL` and prints
// it back, copies every request header into a Map to find the user agent, runs four hooks through
// closures, injects through an intermediate object, keeps its records in a WeakMap and times with
// hrTime tuples. Here an origin is parsed once and kept, a path that is already in the form the URL
// parser would print is used as it is, the user agent is found in place, the propagation headers go
// straight onto the request, and the span's network and status attributes are only set on a span
// that records. Requests the SDK does not trace (a suppressed context: the OTLP exporter's own) cost
// one context lookup.

/** Configuration of {@link FetchClientInstrumentation}. */
export interface FetchClientInstrumentationConfig extends InstrumentationConfig {
  /** Request paths (without the query) that get no span: health checks. */
  untracedPaths?: readonly string[];
}

/** The instrumentation scope of the client spans. */
export const FETCH_CLIENT_SCOPE = '@agentrt/instrument/undici';

/** What undici's diagnostics channels hand us of a request (undici 6+, Node's bundled fetch). */
interface UndiciRequest {
  origin: string | URL;
  method: string;
  path: string;
  headers: (string | string[])[] | string;
  addHeader?(name: string, value: string): unknown;
  [REQUEST_STATE]?: RequestState;
}

interface UndiciResponse {
  statusCode: number;
}

interface RequestState {
  span: Span;
  started: number;
  method: string;
  origin: ParsedOrigin;
  protocolVersion: string | undefined;
  statusCode: number | undefined;
  errorType: string | undefined;
}

/** An origin's scheme, host and port as `new URL(origin)` gives them, and its printed form. */
interface ParsedOrigin {
  href: string;
  scheme: string;
  address: string;
  port: number | undefined;
}

const REQUEST_STATE = Symbol('agentrt.fetchClient');

const KNOWN_METHODS = new Set([
  'CONNECT',
  'OPTIONS',
  'HEAD',
  'GET',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'TRACE',
  'QUERY',
]);

/** The method as semantic conventions name it (`_OTHER` for one they do not know). */
export function normalizedMethod(method: string): string {
  if (KNOWN_METHODS.has(method)) return method;
  const upper = method.toUpperCase();
  return KNOWN_METHODS.has(upper) ? upper : '_OTHER';
}

const ORIGINS_KEPT = 256;
const origins = new Map<string, ParsedOrigin | null>();

/** Parses an origin once (an agent talks to a handful); null when it is not a URL. */
export function parseOrigin(origin: string): ParsedOrigin | null {
  let parsed = origins.get(origin);
  if (parsed !== undefined) return parsed;
  try {
    const url = new URL(origin);
    const scheme = url.protocol.slice(0, -1);
    const port = url.port === '' ? { https: 443, http: 80 }[scheme] : Number(url.port);
    parsed = { href: url.origin, scheme, address: url.hostname, port };
    if (url.origin === 'null' || url.pathname !== '/' || url.search !== '') parsed = null;
  } catch {
    parsed = null;
  }
  if (origins.size >= ORIGINS_KEPT) origins.clear();
  origins.set(origin, parsed);
  return parsed;
}

/**
 * A path (with query) that the URL parser prints back unchanged: `/` and then only characters it
 * neither percent-encodes nor reads specially (no `'`, which it encodes in a query, no backslash,
 * fragment, space or non-ASCII), with no dot segment (`/.`) and no encoded dot.
 */
const CANONICAL_PATH = /^\/[A-Za-z0-9\-._~!$&()*+,;=:@/?%]*$/;

/** `url.full`, `url.path` and `url.query` of a request, as upstream's `new URL(path, origin)` gives them. */
export function urlAttributes(origin: ParsedOrigin, path: string, attributes: Attributes): boolean {
  if (CANONICAL_PATH.test(path) && !path.includes('/.') && !/%2e/i.test(path)) {
    const q = path.indexOf('?');
    attributes['url.full'] = origin.href + path;
    attributes['url.path'] = q < 0 ? path : path.slice(0, q);
    attributes['url.query'] = q < 0 || q === path.length - 1 ? '' : path.slice(q);
    return true;
  }
  try {
    const url = new URL(path, origin.href);
    attributes['url.full'] = url.href;
    attributes['url.path'] = url.pathname;
    attributes['url.query'] = url.search;
    return true;
  } catch {
    return false;
  }
}

/** The request's last User-Agent header, found without copying the headers. */
function userAgentOf(headers: UndiciRequest['headers']): string | undefined {
  let found: string | undefined;
  if (Array.isArray(headers)) {
    for (let i = 0; i < headers.length; i += 2) {
      const key = headers[i];
      if (typeof key === 'string' && key.length === 10 && key.toLowerCase() === 'user-agent') {
        const value = headers[i + 1];
        found = Array.isArray(value) ? value[value.length - 1] : value;
      }
    }
  } else if (typeof headers === 'string') {
    for (const line of headers.split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon === 10 && line.slice(0, 10).toLowerCase() === 'user-agent') found = line.slice(11).trim();
    }
  }
  return found;
}

/** Writes propagation headers straight onto an undici request. */
const requestSetter: TextMapSetter<UndiciRequest> = {
  set(request, key, value) {
    if (typeof request.addHeader === 'function') request.addHeader(key, value);
    else if (typeof request.headers === 'string') request.headers += `${key}: ${value}\r\n`;
    else if (Array.isArray(request.headers)) request.headers.push(key, value);
  },
};

/**
 * CLIENT spans for requests made with fetch() or undici, continued from the active context, with
 * the W3C / X-Ray / baggage headers of the span injected into the request.
 */
export class FetchClientInstrumentation extends InstrumentationBase<FetchClientInstrumentationConfig> {
  // `declare`d: the base class's constructor sets them (enable(), _updateMetricInstruments()), and a
  // field of this class would be reset to undefined once it returns, leaving the channels subscribed
  declare private duration: Histogram | undefined;
  declare private subscriptions: [string, (message: unknown) => void][] | undefined;
  private readonly isUntraced: (url: string) => boolean;

  constructor(config: FetchClientInstrumentationConfig = {}) {
    super(FETCH_CLIENT_SCOPE, VERSION, config);
    this.isUntraced = untracedPaths(config.untracedPaths);
  }

  protected init() {
    return undefined;
  }

  protected override _updateMetricInstruments(): void {
    this.duration = httpDurationHistogram(
      this.meter,
      'http.client.request.duration',
      'Measures the duration of outbound HTTP requests.',
    );
  }

  override enable(): void {
    super.enable();
    if (this.subscriptions !== undefined) return;
    this.subscriptions = [
      ['undici:request:create', (m) => this.onCreate(m as { request: UndiciRequest })],
      [
        'undici:client:sendHeaders',
        (m) => this.onSendHeaders(m as { request: UndiciRequest; socket: { alpnProtocol?: unknown } }),
      ],
      [
        'undici:request:headers',
        (m) => this.onResponseHeaders(m as { request: UndiciRequest; response: UndiciResponse }),
      ],
      ['undici:request:trailers', (m) => this.onDone((m as { request: UndiciRequest }).request)],
      ['undici:request:error', (m) => this.onError(m as { request: UndiciRequest; error: unknown })],
    ];
    for (const [name, listener] of this.subscriptions) subscribe(name, listener);
  }

  override disable(): void {
    super.disable();
    for (const [name, listener] of this.subscriptions ?? []) unsubscribe(name, listener);
    this.subscriptions = undefined;
  }

  private onCreate({ request }: { request: UndiciRequest }): void {
    const method = request.method;
    if (method === 'CONNECT' || this.isUntraced(request.path)) return;
    const origin = parseOrigin(typeof request.origin === 'string' ? request.origin : String(request.origin));
    if (origin === null) return;
    const name = normalizedMethod(method);
    const attributes: Attributes = {
      'http.request.method': name,
      'http.request.method_original': method,
    };
    if (!urlAttributes(origin, request.path, attributes)) return;
    attributes['url.scheme'] = origin.scheme;
    attributes['server.address'] = origin.address;
    if (origin.port !== undefined) attributes['server.port'] = origin.port;
    const agent = userAgentOf(request.headers);
    if (agent !== undefined) attributes['user_agent.original'] = agent;
    const parent = context.active();
    const span = this.tracer.startSpan(
      name === '_OTHER' ? 'HTTP' : name,
      { kind: SpanKind.CLIENT, attributes },
      parent,
    );
    const active: Context = trace.setSpan(parent, span);
    propagation.inject(active, request, requestSetter);
    request[REQUEST_STATE] = {
      span,
      started: performance.now(),
      method: name,
      origin,
      protocolVersion: undefined,
      statusCode: undefined,
      errorType: undefined,
    };
  }

  private onSendHeaders({
    request,
    socket,
  }: {
    request: UndiciRequest;
    socket: { remoteAddress?: string; remotePort?: number; alpnProtocol?: unknown };
  }): void {
    const state = request[REQUEST_STATE];
    if (state === undefined) return;
    // undici offers only `http/1.1` and, with allowH2, `h2`
    state.protocolVersion = socket.alpnProtocol === 'h2' ? '2' : '1.1';
    if (!state.span.isRecording()) return;
    state.span.setAttributes({
      'network.peer.address': socket.remoteAddress,
      'network.peer.port': socket.remotePort,
      'network.protocol.version': state.protocolVersion,
    });
  }

  private onResponseHeaders({
    request,
    response,
  }: {
    request: UndiciRequest;
    response: UndiciResponse;
  }): void {
    const state = request[REQUEST_STATE];
    if (state === undefined) return;
    state.statusCode = response.statusCode;
    if (state.statusCode >= 400) state.errorType = String(state.statusCode);
    if (!state.span.isRecording()) return;
    state.span.setAttribute('http.response.status_code', state.statusCode);
    if (state.errorType !== undefined) {
      state.span.setAttribute('error.type', state.errorType);
      state.span.setStatus({ code: SpanStatusCode.ERROR });
    }
  }

  private onDone(request: UndiciRequest): void {
    const state = request[REQUEST_STATE];
    if (state === undefined) return;
    request[REQUEST_STATE] = undefined;
    state.span.end();
    this.recordDuration(state);
  }

  private onError({ request, error }: { request: UndiciRequest; error: unknown }): void {
    const state = request[REQUEST_STATE];
    if (state === undefined) return;
    request[REQUEST_STATE] = undefined;
    const err = error as { name?: string; code?: unknown; message?: string } | undefined;
    // a request cancelled through its AbortSignal is not an error (semantic conventions)
    const aborted =
      err?.name === 'AbortError' || (error instanceof DOMException && error.code === DOMException.ABORT_ERR);
    if (!aborted) {
      // a low-cardinality string: a system error's code (ECONNREFUSED), else the error's name
      // (TimeoutError; upstream puts a DOMException's numeric legacy code here)
      state.errorType = (typeof err?.code === 'string' && err.code) || err?.name || 'Error';
      state.span.setAttribute('error.type', state.errorType);
      state.span.recordException(error instanceof Error ? error : String(error));
      state.span.setStatus({ code: SpanStatusCode.ERROR, message: err?.message });
    }
    state.span.end();
    this.recordDuration(state);
  }

  private recordDuration(state: RequestState): void {
    if (this.duration === undefined) return;
    const attributes: Attributes = {
      'http.request.method': state.method,
      'server.address': state.origin.address,
      'url.scheme': state.origin.scheme,
    };
    if (state.statusCode !== undefined) attributes['http.response.status_code'] = state.statusCode;
    if (state.origin.port !== undefined) attributes['server.port'] = state.origin.port;
    if (state.errorType !== undefined) attributes['error.type'] = state.errorType;
    if (state.protocolVersion !== undefined) attributes['network.protocol.version'] = state.protocolVersion;
    this.duration.record((performance.now() - state.started) / 1000, attributes);
  }
}

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import {
  type Attributes,
  type Context,
  type Histogram,
  type Meter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  ValueType,
  context,
  propagation,
  trace,
} from '@opentelemetry/api';
import { RPCType, type RPCMetadata, setRPCMetadata, suppressTracing } from '@opentelemetry/core';
import {
  type InstrumentationConfig,
  InstrumentationBase,
  InstrumentationNodeModuleDefinition,
} from '@opentelemetry/instrumentation';
import { endServerSpan } from '@agentrt/propagation';
import { VERSION } from './version.js';

// Incoming HTTP requests as SERVER spans, for the cost of little more than the span itself.
//
// The upstream @opentelemetry/instrumentation-http makes the same span but, per request, also
// binds the request and response emitters (six patched methods each), computes the old and the
// stable semantic-convention attribute sets, parses headers it then drops, and records its
// metrics through several attribute hashes. On a contract server that answers in ~30 µs of CPU
// that tripled the cost of a request (bench/instrument). This one keeps what a trace backend
// uses — the stable HTTP server attributes, the route the framework matched, status, the W3C /
// X-Ray / baggage context of the caller — and the `http.server.request.duration` histogram; the
// upstream instrumentation still traces outgoing requests.

/** Configuration of {@link HttpServerInstrumentation}. */
export interface HttpServerInstrumentationConfig extends InstrumentationConfig {
  /** Requests (by path, without the query) that get neither a span nor child spans: health checks. */
  untracedPaths?: readonly string[];
  /**
   * The empty context an incoming request's context is extracted into (default the API's
   * ROOT_CONTEXT); lean mode gives its persistent one, so every context the request's handling
   * derives from it adds a link instead of copying a Map.
   */
  rootContext?: Context;
}

/** The buckets (s) of the HTTP request-duration histograms, server and client: semantic conventions'. */
export const HTTP_DURATION_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
];

/** An HTTP request-duration histogram in seconds with the semantic conventions' buckets. */
export function httpDurationHistogram(meter: Meter, name: string, description: string): Histogram {
  return meter.createHistogram(name, {
    description,
    unit: 's',
    valueType: ValueType.DOUBLE,
    advice: { explicitBucketBoundaries: HTTP_DURATION_BUCKETS },
  });
}

/** A test for the request paths (query ignored) that get no span; no work when there are none. */
export function untracedPaths(paths: readonly string[] | undefined): (url: string) => boolean {
  const untraced = new Set(paths ?? []);
  return untraced.size === 0 ? () => false : (url) => untraced.has(pathOf(url));
}

/** The instrumentation scope of the server spans. */
export const HTTP_SERVER_SCOPE = '@agentrt/instrument/http-server';

type Emit = Server['emit'];
type Request = IncomingMessage & { socket: IncomingMessage['socket'] & { encrypted?: boolean } };

/** The path part of a request target (`/a/b?x=1` → `/a/b`). */
export function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** `server.address` / `server.port` from the Host header (`[::1]:8080`, `example.com`, …). */
function hostAttributes(host: string | undefined, scheme: string, attributes: Attributes): void {
  if (host === undefined || host === '') return;
  const colon = host.lastIndexOf(':');
  const bracket = host.lastIndexOf(']');
  if (colon > bracket) {
    attributes['server.address'] = host.slice(0, colon);
    const port = Number(host.slice(colon + 1));
    if (Number.isInteger(port)) attributes['server.port'] = port;
  } else {
    attributes['server.address'] = host;
    attributes['server.port'] = scheme === 'https' ? 443 : 80;
  }
}

/** Ends one request's span (once) when its response closes: sent, or its connection gone. */
class ServerRequest {
  private ended = false;
  private failed = false;
  private readonly started = performance.now();

  constructor(
    private readonly span: Span,
    private readonly rpc: RPCMetadata & { route?: string },
    private readonly method: string,
    private readonly scheme: string,
    private readonly response: ServerResponse,
    private readonly duration: Histogram | undefined,
  ) {}

  /** The handler threw synchronously: the span says so and ends now. */
  fail(error: unknown): void {
    this.failed = true;
    const message = error instanceof Error ? error.message : String(error);
    this.span.recordException(error instanceof Error ? error : message);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message });
    this.end();
  }

  readonly end = (): void => {
    if (this.ended) return;
    this.ended = true;
    const { span, response } = this;
    const route = this.rpc.route;
    if (route !== undefined) {
      span.setAttribute('http.route', route);
      span.updateName(`${this.method} ${route}`);
    }
    endServerSpan(span, response, this.failed);
    if (this.duration !== undefined) {
      const attributes: Attributes = {
        'http.request.method': this.method,
        'url.scheme': this.scheme,
        'http.response.status_code': response.statusCode,
      };
      if (route !== undefined) attributes['http.route'] = route;
      this.duration.record((performance.now() - this.started) / 1000, attributes);
    }
  };
}

/**
 * SERVER spans for incoming `http`/`https` requests: the caller's context (per the global
 * propagator) is continued, the request handler runs with the span active, frameworks name the
 * route through the RPC metadata (as with the upstream instrumentation), and untraced paths run with
 * tracing suppressed.
 */
export class HttpServerInstrumentation extends InstrumentationBase<HttpServerInstrumentationConfig> {
  private duration: Histogram | undefined;

  constructor(config: HttpServerInstrumentationConfig = {}) {
    super(HTTP_SERVER_SCOPE, VERSION, config);
  }

  protected override _updateMetricInstruments(): void {
    this.duration = httpDurationHistogram(
      this.meter,
      'http.server.request.duration',
      'Duration of HTTP server requests.',
    );
  }

  protected init() {
    const patch = (scheme: 'http' | 'https') => (exports: { Server: { prototype: Server } }) => {
      this._wrap(exports.Server.prototype, 'emit', (original) => this.patchEmit(original, scheme));
      return exports;
    };
    const unpatch = (exports: { Server: { prototype: Server } }) =>
      this._unwrap(exports.Server.prototype, 'emit');
    return [
      new InstrumentationNodeModuleDefinition('http', ['*'], patch('http'), unpatch),
      new InstrumentationNodeModuleDefinition('https', ['*'], patch('https'), unpatch),
    ];
  }

  private patchEmit(original: Emit, scheme: 'http' | 'https'): Emit {
    const traceRequest = this.traceRequest.bind(this);
    const isUntraced = untracedPaths(this.getConfig().untracedPaths);
    return function emit(this: Server, ...args: [event: string | symbol, ...rest: unknown[]]): boolean {
      if (args[0] !== 'request') return Reflect.apply(original, this, args) as boolean;
      const request = args[1] as Request;
      const response = args[2] as ServerResponse;
      const handle = () => Reflect.apply(original, this, args) as boolean;
      const path = pathOf(request.url ?? '/');
      if (isUntraced(path)) return context.with(suppressTracing(context.active()), handle);
      return traceRequest(request, response, path, scheme, handle);
    };
  }

  private traceRequest(
    request: Request,
    response: ServerResponse,
    path: string,
    scheme: string,
    handle: () => boolean,
  ): boolean {
    const method = request.method ?? 'GET';
    const headers = request.headers;
    const parent = propagation.extract(this.getConfig().rootContext ?? ROOT_CONTEXT, headers);
    const attributes: Attributes = {
      'http.request.method': method,
      'url.path': path,
      'url.scheme': scheme,
      'network.protocol.version': request.httpVersion,
    };
    hostAttributes(headers.host, scheme, attributes);
    const client = request.socket.remoteAddress;
    if (client !== undefined) attributes['client.address'] = client;
    const agent = headers['user-agent'];
    if (agent !== undefined) attributes['user_agent.original'] = agent;
    const span = this.tracer.startSpan(method, { kind: SpanKind.SERVER, attributes }, parent);
    const rpc: RPCMetadata = { type: RPCType.HTTP, span };
    const active: Context = setRPCMetadata(trace.setSpan(parent, span), rpc);
    const done = new ServerRequest(span, rpc, method, scheme, response, this.duration);
    // 'close' follows 'finish' a tick later, and ends the span alone when the connection went away
    // first: one listener, not a `once` wrapper for each event.
    response.on('close', done.end);
    try {
      return context.with(active, handle);
    } catch (error) {
      done.fail(error);
      throw error;
    }
  }
}

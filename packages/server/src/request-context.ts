import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { type Context as OtelContext, isSpanContextValid, propagation, trace } from '@opentelemetry/api';
import {
  LEGACY_WORKLOAD_ACCESS_TOKEN_HEADER,
  OAUTH2_CALLBACK_URL_HEADER,
  REQUEST_ID_HEADERS,
  USER_ID_HEADERS,
  WORKLOAD_ACCESS_TOKEN_HEADER,
  headerValue,
} from '@agentrt/propagation';
import { defaultTextMapGetter } from '@opentelemetry/api';
import { pickForwardedHeaders } from './forwarded-headers.js';

/** What an entrypoint knows about the request it serves. Also reachable via {@link getRequestContext}. */
export interface RequestContext {
  /** The runtime session id (session header, baggage `session.id`, or the body's `sessionId`). */
  readonly sessionId: string | undefined;
  /** The request id header, or a fresh UUID. */
  readonly requestId: string;
  /** The runtime user id header, if sent. */
  readonly userId: string | undefined;
  /** Trace id of the request's server span (or the incoming parent when tracing is off). */
  readonly traceId: string | undefined;
  /** Span id of the request's server span. */
  readonly spanId: string | undefined;
  /** Incoming W3C baggage entries, plus `session.id`. */
  readonly baggage: Readonly<Record<string, string>>;
  /** The forwarded request headers (lowercase names; see the README for the rule). */
  readonly headers: Readonly<Record<string, string>>;
  /** The workload access token header, if sent. */
  readonly workloadAccessToken: string | undefined;
  /** The OAuth2 callback URL header, if sent. */
  readonly oauth2CallbackUrl: string | undefined;
  /** Fires when the client disconnects (or the server's drain deadline passes). */
  readonly signal: AbortSignal;
  /** The OpenTelemetry context the entrypoint runs in. */
  readonly otelContext: OtelContext;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** The context of the invocation being served, from anywhere inside it; undefined outside one. */
export function getRequestContext(): RequestContext | undefined {
  return storage.getStore();
}

/** `sessionId`, `requestId` and `traceId` of the current invocation, for log records. */
export function correlationFields(): Record<string, string> {
  const rc = storage.getStore();
  if (!rc) return {};
  const fields: Record<string, string> = { requestId: rc.requestId };
  if (rc.sessionId !== undefined) fields.sessionId = rc.sessionId;
  if (rc.traceId !== undefined) fields.traceId = rc.traceId;
  return fields;
}

/** Runs `fn` with `requestContext` as the value of {@link getRequestContext}. */
export function runWithRequestContext<T>(requestContext: RequestContext, fn: () => T): T {
  return storage.run(requestContext, fn);
}

const ID_PATTERN = /^[\w.:@=+/-]{1,256}$/;

function idHeader(headers: IncomingHttpHeaders, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = headerValue(headers, name, defaultTextMapGetter);
    if (value !== undefined && ID_PATTERN.test(value)) return value;
  }
  return undefined;
}

/** Inputs of {@link InvocationContext}. */
export interface InvocationContextInput {
  headers: IncomingHttpHeaders;
  /** The OpenTelemetry context, or a function computing it when first needed. */
  otelContext: OtelContext | (() => OtelContext);
  sessionId: string | undefined;
  headerAllowList?: ReadonlySet<string> | undefined;
}

/**
 * The {@link RequestContext} of one invocation. Parts an entrypoint may never read (forwarded
 * headers, baggage, the abort signal) are built on first access, which keeps the per-request cost
 * of the server close to a bare Koa handler's.
 */
export class InvocationContext implements RequestContext {
  readonly sessionId: string | undefined;
  readonly #input: InvocationContextInput;
  #otelContext: OtelContext | undefined;
  #requestId: string | undefined;
  #headers: Record<string, string> | undefined;
  #baggage: Record<string, string> | undefined;
  #controller: AbortController | undefined;
  #abortReason: unknown;
  #aborted = false;

  constructor(input: InvocationContextInput) {
    this.#input = input;
    this.sessionId = input.sessionId;
  }

  get otelContext(): OtelContext {
    const source = this.#input.otelContext;
    return (this.#otelContext ??= typeof source === 'function' ? source() : source);
  }

  /** The request id header if one was sent; else a UUID generated on first read. */
  get requestId(): string {
    return (this.#requestId ??= this.sentRequestId ?? randomUUID());
  }

  /** The generated request id, if {@link requestId} was read and no header was sent. */
  get generatedRequestId(): string | undefined {
    return this.#requestId;
  }

  /** The request id header as sent (valid ids only), without generating one. */
  get sentRequestId(): string | undefined {
    return idHeader(this.#input.headers, REQUEST_ID_HEADERS);
  }

  get userId(): string | undefined {
    return firstValue(this.#input.headers, USER_ID_HEADERS);
  }

  get traceId(): string | undefined {
    const sc = trace.getSpanContext(this.otelContext);
    return sc && isSpanContextValid(sc) ? sc.traceId : undefined;
  }

  get spanId(): string | undefined {
    const sc = trace.getSpanContext(this.otelContext);
    return sc && isSpanContextValid(sc) ? sc.spanId : undefined;
  }

  get baggage(): Readonly<Record<string, string>> {
    if (this.#baggage === undefined) {
      this.#baggage = {};
      for (const [key, entry] of propagation.getBaggage(this.otelContext)?.getAllEntries() ?? []) {
        this.#baggage[key] = entry.value;
      }
    }
    return this.#baggage;
  }

  get headers(): Readonly<Record<string, string>> {
    return (this.#headers ??= pickForwardedHeaders(this.#input.headers, this.#input.headerAllowList));
  }

  get workloadAccessToken(): string | undefined {
    return firstValue(this.#input.headers, [
      WORKLOAD_ACCESS_TOKEN_HEADER,
      LEGACY_WORKLOAD_ACCESS_TOKEN_HEADER,
    ]);
  }

  get oauth2CallbackUrl(): string | undefined {
    return firstValue(this.#input.headers, [OAUTH2_CALLBACK_URL_HEADER]);
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  /** Fires the signal (client gone, or the server's drain deadline). Idempotent. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#abortReason = reason;
    this.#controller?.abort(reason);
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  /** A plain snapshot, so `console.log(context)` and `JSON.stringify` show the getters' values. */
  toJSON(): Omit<RequestContext, 'signal' | 'otelContext'> {
    // (requestId is generated here if nobody read it before)
    return {
      sessionId: this.sessionId,
      requestId: this.requestId,
      userId: this.userId,
      traceId: this.traceId,
      spanId: this.spanId,
      baggage: this.baggage,
      headers: this.headers,
      workloadAccessToken: this.workloadAccessToken,
      oauth2CallbackUrl: this.oauth2CallbackUrl,
    };
  }
}

function firstValue(headers: IncomingHttpHeaders, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = headerValue(headers, name, defaultTextMapGetter);
    if (value !== undefined) return value;
  }
  return undefined;
}

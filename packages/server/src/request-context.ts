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

/** Runs `fn` with `requestContext` as the value of {@link getRequestContext}. */
export function runWithRequestContext<T>(requestContext: RequestContext, fn: () => T): T {
  return storage.run(requestContext, fn);
}

const ID_PATTERN = /^[\w.:@=+/-]{1,256}$/;

function idHeader(headers: IncomingHttpHeaders, names: readonly string[], max: number): string | undefined {
  for (const name of names) {
    const value = headerValue(headers, name, defaultTextMapGetter);
    if (value !== undefined && value.length <= max && ID_PATTERN.test(value)) return value;
  }
  return undefined;
}

/** Builds the request context from the request headers and the OpenTelemetry context. */
export function createRequestContext(input: {
  headers: IncomingHttpHeaders;
  otelContext: OtelContext;
  sessionId: string | undefined;
  signal: AbortSignal;
  headerAllowList?: ReadonlySet<string>;
}): RequestContext {
  const { headers, otelContext } = input;
  const spanContext = trace.getSpanContext(otelContext);
  const valid = spanContext !== undefined && isSpanContextValid(spanContext);
  const baggage: Record<string, string> = {};
  for (const [key, entry] of propagation.getBaggage(otelContext)?.getAllEntries() ?? []) {
    baggage[key] = entry.value;
  }
  return {
    sessionId: input.sessionId,
    requestId: idHeader(headers, REQUEST_ID_HEADERS, 256) ?? randomUUID(),
    userId:
      headerValue(headers, USER_ID_HEADERS[0], defaultTextMapGetter) ??
      headerValue(headers, USER_ID_HEADERS[1], defaultTextMapGetter),
    traceId: valid ? spanContext.traceId : undefined,
    spanId: valid ? spanContext.spanId : undefined,
    baggage,
    headers: pickForwardedHeaders(headers, input.headerAllowList),
    workloadAccessToken:
      headerValue(headers, WORKLOAD_ACCESS_TOKEN_HEADER, defaultTextMapGetter) ??
      headerValue(headers, LEGACY_WORKLOAD_ACCESS_TOKEN_HEADER, defaultTextMapGetter),
    oauth2CallbackUrl: headerValue(headers, OAUTH2_CALLBACK_URL_HEADER, defaultTextMapGetter),
    signal: input.signal,
    otelContext,
  };
}

import type { AttributeValue, Attributes, LogRecord, SpanRecord } from '../wire-types.js';
import { KIND_NAMES, STATUS_NAMES } from './records.js';

// Span and log records back to OTLP/JSON, for `agentrt traces export` files and forwarding of
// imported data. Numbers become intValue when they are integers, doubleValue otherwise.

type Json = Record<string, unknown>;

export function anyValueJson(v: AttributeValue): Json {
  if (v === null) return {};
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
  if (Array.isArray(v)) return { arrayValue: { values: v.map(anyValueJson) } };
  return { kvlistValue: { values: keyValuesJson(v) } };
}

export function keyValuesJson(attrs: Attributes): Json[] {
  return Object.keys(attrs).map((key) => ({ key, value: anyValueJson(attrs[key] ?? null) }));
}

const nanos = (n: number): string => BigInt(Math.round(n)).toString();

/** Groups records by resource and scope, as OTLP envelopes do. */
function group<T extends { resource: { attributes: Attributes }; scope: { name: string; version?: string } }>(
  records: T[],
): { resource: Attributes; scopes: { scope: T['scope']; items: T[] }[] }[] {
  const byResource = new Map<
    string,
    { resource: Attributes; scopes: Map<string, { scope: T['scope']; items: T[] }> }
  >();
  for (const r of records) {
    const rk = JSON.stringify(r.resource.attributes);
    let entry = byResource.get(rk);
    if (!entry) byResource.set(rk, (entry = { resource: r.resource.attributes, scopes: new Map() }));
    const sk = `${r.scope.name}\u0000${r.scope.version ?? ''}`;
    let scope = entry.scopes.get(sk);
    if (!scope) entry.scopes.set(sk, (scope = { scope: r.scope, items: [] }));
    scope.items.push(r);
  }
  return [...byResource.values()].map((e) => ({ resource: e.resource, scopes: [...e.scopes.values()] }));
}

/** Span records → an OTLP/JSON ExportTraceServiceRequest object. */
export function spansToOtlpJson(spans: SpanRecord[]): Json {
  return {
    resourceSpans: group(spans).map((r) => ({
      resource: { attributes: keyValuesJson(r.resource) },
      scopeSpans: r.scopes.map((s) => ({
        scope: s.scope,
        spans: s.items.map((span) => {
          const o: Json = {
            traceId: span.traceId,
            spanId: span.spanId,
            name: span.name,
            kind: Math.max(0, KIND_NAMES.indexOf(span.kind)),
            startTimeUnixNano: nanos(span.startTimeUnixNano),
            endTimeUnixNano: (
              BigInt(Math.round(span.startTimeUnixNano)) + BigInt(Math.round(span.durationNano))
            ).toString(),
            attributes: keyValuesJson(span.attributes),
            events: span.events.map((e) => ({
              name: e.name,
              timeUnixNano: nanos(e.timeUnixNano),
              attributes: keyValuesJson(e.attributes),
            })),
            links: span.links.map((l) => ({ ...l, attributes: keyValuesJson(l.attributes) })),
            status: {
              code: Math.max(0, STATUS_NAMES.indexOf(span.status.code)),
              ...(span.status.message ? { message: span.status.message } : {}),
            },
          };
          if (span.parentSpanId) o.parentSpanId = span.parentSpanId;
          if (span.traceState) o.traceState = span.traceState;
          if (span.flags !== undefined) o.flags = span.flags;
          return o;
        }),
      })),
    })),
  };
}

/** Log records → an OTLP/JSON ExportLogsServiceRequest object. */
export function logsToOtlpJson(logs: LogRecord[]): Json {
  return {
    resourceLogs: group(logs).map((r) => ({
      resource: { attributes: keyValuesJson(r.resource) },
      scopeLogs: r.scopes.map((s) => ({
        scope: s.scope,
        logRecords: s.items.map((l) => {
          const o: Json = {
            timeUnixNano: nanos(l.timeUnixNano),
            observedTimeUnixNano: nanos(l.observedTimeUnixNano),
            severityNumber: l.severityNumber,
            body: anyValueJson(l.body),
            attributes: keyValuesJson(l.attributes),
          };
          if (l.severityText) o.severityText = l.severityText;
          if (l.traceId) o.traceId = l.traceId;
          if (l.spanId) o.spanId = l.spanId;
          if (l.flags !== undefined) o.flags = l.flags;
          if (l.eventName) o.eventName = l.eventName;
          return o;
        }),
      })),
    })),
  };
}

/** Span-record builder shared by the trace-model tests (not part of the public API). */
import type { Attributes, SpanRecord } from '../wire-types.js';

export interface TestSpan {
  id: string;
  parent?: string;
  name?: string;
  startMs: number;
  endMs: number;
  attributes?: Attributes;
}

const MS = 1_000_000;

/** A SpanRecord with readable ids and millisecond times (ids padded to hex-looking strings). */
export function testSpan(t: TestSpan): SpanRecord {
  const span: SpanRecord = {
    resource: { attributes: { 'service.name': 'svc' } },
    scope: { name: 'test' },
    traceId: 'a'.repeat(32),
    spanId: t.id,
    name: t.name ?? t.id,
    kind: 'INTERNAL',
    startTimeUnixNano: t.startMs * MS,
    endTimeUnixNano: t.endMs * MS,
    durationNano: (t.endMs - t.startMs) * MS,
    attributes: t.attributes ?? {},
    status: { code: 'UNSET' },
    events: [],
    links: [],
  };
  if (t.parent) span.parentSpanId = t.parent;
  return span;
}

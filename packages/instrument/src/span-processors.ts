import { type Context, propagation } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { LogRecordProcessor, SdkLogRecord } from '@opentelemetry/sdk-logs';
import type { AttributeFilter } from './attribute-filter.js';

/**
 * Copies the listed baggage entries (always `session.id`) onto every span when it starts, so a
 * session's spans can be found by attribute in any backend. Runs at start, not end, because
 * samplers and tail processors look at start attributes.
 */
export function createBaggageSpanProcessor(keys: readonly string[]): SpanProcessor {
  return {
    onStart(span: Span, parentContext: Context) {
      const baggage = propagation.getBaggage(parentContext);
      if (baggage === undefined) return;
      for (const key of keys) {
        const entry = baggage.getEntry(key);
        if (entry !== undefined && entry.value !== '') span.setAttribute(key, entry.value);
      }
    },
    onEnd() {},
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}

/**
 * Drops GenAI message content (unless capture is on) and redacts secrets from span and event
 * attributes. Runs in `onEnding`, while the span is still open, before any exporter sees it.
 */
export function createAttributeFilterSpanProcessor(filter: AttributeFilter): SpanProcessor {
  return {
    onStart() {},
    onEnding: (span: Span) => filterSpan(filter, span),
    onEnd() {},
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}

/** Applies `filter` to a span's attributes, its events (dropping the content ones) and links. */
export function filterSpan(
  filter: AttributeFilter,
  span: Pick<ReadableSpan, 'attributes' | 'events' | 'links'>,
): void {
  filter.apply(span.attributes as Record<string, unknown>);
  const events = span.events as ReadableSpan['events'] & unknown[];
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i];
    if (event === undefined) continue;
    if (filter.dropsEvent(event.name)) {
      events.splice(i, 1);
    } else if (event.attributes !== undefined) {
      filter.apply(event.attributes as Record<string, unknown>);
    }
  }
  for (const link of span.links) {
    if (link.attributes !== undefined) filter.apply(link.attributes as Record<string, unknown>);
  }
}

/** The same filter for log records (log attributes can carry headers and GenAI content too). */
export function createAttributeFilterLogProcessor(filter: AttributeFilter): LogRecordProcessor {
  return {
    onEmit(record: SdkLogRecord) {
      filter.apply(record.attributes as Record<string, unknown>);
    },
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}

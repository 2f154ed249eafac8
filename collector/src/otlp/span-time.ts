// Which span start times the collector stores. Retention works by age (SQLite deletes by start time,
// ClickHouse drops whole days), so a span stamped in 1970 (a start time left at 0) would be deleted
// within a minute of being acknowledged, and one stamped in 2200 would never age out and lands past
// the last day ClickHouse's Date can hold. Such spans are refused at ingest, reported as OTLP
// partial success naming the field, rather than stored where retention cannot handle them.
import type { DecodedTraces } from './records.js';

/** The earliest start time taken: 2000-01-01T00:00:00Z (anything before is an unset clock). */
export const EARLIEST_SPAN_START_MS = Date.UTC(2000, 0, 1);
/** How far past the collector's clock a start time may be (clocks drift; a day is generous). */
export const MAX_SPAN_START_AHEAD_MS = 24 * 3_600_000;

/**
 * The decoded spans without those starting outside [2000-01-01, now + 24 h], counted as rejected;
 * the first reason stays the request's.
 */
export function spansInTimeWindow(decoded: DecodedTraces, nowMs: number): DecodedTraces {
  const lastMs = nowMs + MAX_SPAN_START_AHEAD_MS;
  const spans = decoded.spans.filter((s) => {
    const startMs = s.startTimeUnixNano / 1e6;
    return startMs >= EARLIEST_SPAN_START_MS && startMs <= lastMs;
  });
  const outside = decoded.spans.length - spans.length;
  if (!outside) return decoded;
  return {
    spans,
    rejected: decoded.rejected + outside,
    rejectReason:
      decoded.rejectReason ??
      `${outside} span(s) with startTimeUnixNano before 2000-01-01 or more than 24 h ahead of the collector's clock (${new Date(nowMs).toISOString()}): not stored`,
  };
}

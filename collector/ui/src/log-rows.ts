/** The Logs view's rows: newest first by the record's own time, whatever order they arrived in. */
import type { LogRowView } from './api.js';

/**
 * `incoming` merged into `shown` (both any order), newest first by time (then by arrival), at most
 * `max` rows: the oldest go first. Records of several services reach the collector out of time order.
 */
export function mergeNewestFirst(
  shown: readonly LogRowView[],
  incoming: readonly LogRowView[],
  max: number,
): LogRowView[] {
  return [...shown, ...incoming].sort((a, b) => b.timeMs - a.timeMs || b.cursor - a.cursor).slice(0, max);
}

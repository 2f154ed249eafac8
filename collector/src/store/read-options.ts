// What a listing or retention asks of any store: the trace list's filter and its noise rule, the
// retention bounds, and the fields every span has (autocompletion).

export interface TraceListFilter {
  service?: string;
  status?: 'error' | 'ok';
  minDurationMs?: number;
  /** Free text: a trace id, or a substring of any span's record (case-insensitive). */
  q?: string;
  sessionId?: string;
  /**
   * Probes, synthetic checks and the stack's own traffic (TraceSummary.noise): hidden unless
   * 'include'; 'only' lists just them.
   */
  noise?: 'exclude' | 'include' | 'only';
  /** Traces that started at or after this time (epoch ms). */
  startMs?: number;
  /** Traces that started before this time (epoch ms). */
  endMs?: number;
  limit?: number;
}

/** The noise setting a listing applies: a trace looked up by its id is shown whatever it is. */
export function noiseFilter(filter: TraceListFilter): 'exclude' | 'include' | 'only' {
  if (/^[0-9a-fA-F]{32}$/.test(filter.q?.trim() ?? '')) return 'include';
  return filter.noise ?? 'exclude';
}

export interface RetentionOptions {
  /** Spans and logs older than this (by start time) are deleted. */
  maxAgeMs?: number;
  /** The database is trimmed (oldest first) until its live pages fit. */
  maxBytes?: number;
}

/** Fields every span record has, offered for autocompletion before any attribute key. */
export const FIXED_KEYS = [
  '@timestamp',
  'traceId',
  'spanId',
  'parentSpanId',
  'name',
  'kind',
  'durationNano',
  'startTimeUnixNano',
  'endTimeUnixNano',
  'status.code',
  'status.message',
  'scope.name',
  'scope.version',
  'flags',
  'traceState',
];

// The SQLite schema. One row per span with the columns queries filter on most, plus the whole
// record as JSON (`doc`); log records likewise. Times are stored as epoch microseconds so they stay
// exact JavaScript numbers (epoch nanoseconds do not fit in 2^53).
//
// Version 2 added the GenAI columns (HOT_ATTRIBUTES, query/fields.ts) and their covering index; version 3 orders
// that index by time instead of duration; version 4 drops spans(trace_id, start_us) again. An older data dir is migrated in place when it is opened
// (migrate in span-store.ts).

export const SCHEMA_VERSION = 4;

/**
 * The covering index of model-level GenAI stats (count, tokens, durations by model, over all time or
 * a time window). Ordered by time within a model, new spans land at the end of their model's range:
 * ordered by duration (version 2) every span landed on a random page, and each commit rewrote about
 * one index page per span it inserted. Percentiles come from percentile_disc() over the model's
 * range instead of an index walk.
 */
export const GENAI_INDEX = `CREATE INDEX IF NOT EXISTS spans_genai_time
  ON spans(ga_model, start_us, duration_ns, ga_input_tokens, ga_output_tokens) WHERE ga_model IS NOT NULL;
CREATE INDEX IF NOT EXISTS spans_hot_odd ON spans(id) WHERE hot_odd = 1;`;
/**
 * Indexes of older versions: spans_genai (GENAI_INDEX replaces it) and spans_trace_start (version 4:
 * a trace's pages sort its keys once instead, read-ops.ts createTracePager; the index cost ingest 12–21%
 * of its CPU).
 */
export const DROPPED_INDEXES = ['spans_genai', 'spans_trace_start'];

/** A trace summary that is not noise (TraceSummary.noise): the default trace list's rows. */
export const SIGNAL_TRACE = "json_extract(summary, '$.noise') IS NULL";

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS spans (
  id INTEGER PRIMARY KEY,
  trace_id TEXT NOT NULL,
  span_id TEXT NOT NULL,
  parent_span_id TEXT,
  start_us INTEGER NOT NULL,
  end_us INTEGER NOT NULL,
  duration_ns INTEGER NOT NULL,
  service TEXT,
  session_id TEXT,
  name TEXT NOT NULL,
  status TEXT NOT NULL,
  kind TEXT NOT NULL,
  doc TEXT NOT NULL,
  ga_model TEXT,
  ga_operation TEXT,
  ga_provider TEXT,
  ga_input_tokens,
  ga_output_tokens,
  hot_odd INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS spans_trace ON spans(trace_id, span_id);
CREATE INDEX IF NOT EXISTS spans_session ON spans(session_id, start_us) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS spans_start ON spans(start_us);
CREATE TABLE IF NOT EXISTS logs (
  id INTEGER PRIMARY KEY,
  trace_id TEXT,
  span_id TEXT,
  time_us INTEGER NOT NULL,
  severity INTEGER NOT NULL,
  doc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS logs_trace ON logs(trace_id) WHERE trace_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS logs_time ON logs(time_us);
CREATE TABLE IF NOT EXISTS traces (
  trace_id TEXT PRIMARY KEY,
  start_us INTEGER NOT NULL,
  duration_ns INTEGER NOT NULL,
  service TEXT,
  error_count INTEGER NOT NULL,
  summary TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS traces_start ON traces(start_us);
-- The default trace list (no probes, synthetic checks or internal traffic: TraceSummary.noise) walks
-- this in time order instead of reading every summary past a run of health probes.
CREATE INDEX IF NOT EXISTS traces_signal_start ON traces(start_us) WHERE ${SIGNAL_TRACE};
CREATE TABLE IF NOT EXISTS sessions (
  session_id TEXT PRIMARY KEY,
  last_us INTEGER NOT NULL,
  summary TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_last ON sessions(last_us);
-- Traces and sessions whose summaries need rebuilding: one cheap insert at ingest, rebuilt later.
CREATE TABLE IF NOT EXISTS dirty_traces (trace_id TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dirty_sessions (session_id TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS services (
  name TEXT PRIMARY KEY,
  span_count INTEGER NOT NULL,
  last_us INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS attribute_keys (key TEXT PRIMARY KEY);
`;

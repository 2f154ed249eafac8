// The SQLite schema. One row per span with the columns queries filter on most, plus the whole
// record as JSON (`doc`); log records likewise. Times are stored as epoch microseconds so they stay
// exact JavaScript numbers (epoch nanoseconds do not fit in 2^53).
export const SCHEMA_VERSION = 1;

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
  doc TEXT NOT NULL
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

// The reader pool's own errors (reader-pool.ts), besides a query's QueryFailure (query/query-error.ts). The HTTP
// layer turns each into its answer (http/errors.ts); the stores and the pool load no HTTP code.
/** Too many reads wait for a thread already: the client retries shortly (429, Retry-After 1 s). */
export class ReaderBusyError extends Error {
  override name = 'ReaderBusyError';
}

/** The pool is closing with the collector: what waits is refused (503). */
export class ReaderClosedError extends Error {
  override name = 'ReaderClosedError';
}

/** A query thread stopped under a read (crashed, killed): the client may retry (503). */
export class ReaderThreadError extends Error {
  override name = 'ReaderThreadError';
}

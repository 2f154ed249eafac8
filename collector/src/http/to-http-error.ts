// The one mapping from what the collector's parts fail with to the HTTP error a client gets.
import { OtlpDecodeError } from '../otlp/otlp-decode-error.js';
import { QueryFailure } from '../query/query-error.js';
import { ReaderBusyError, ReaderClosedError, ReaderThreadError } from '../store/reader-errors.js';
import { StoreCorruptError, StoreUnavailableError } from '../store/store.js';
import { HttpError } from '@agentrt/kit';

/** `error` (already seen by the backend's `failure`) as the HttpError its client gets. */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  const cause = { cause: error };
  if (error instanceof StoreCorruptError)
    return new HttpError(503, error.message, { code: 'store_corrupt', ...cause, expose: true });
  if (error instanceof StoreUnavailableError)
    return new HttpError(503, `${error.message}; retry later`, {
      code: 'store_unavailable',
      ...cause,
      headers: { 'retry-after': '5' },
      expose: true,
    });
  if (error instanceof OtlpDecodeError)
    return new HttpError(400, error.message, { code: 'bad_data', ...cause });
  // A read stopped at its deadline or over the result cap (the query threads): the client narrows it.
  if (error instanceof QueryFailure)
    return new HttpError(400, error.message, { code: 'query_stopped', ...cause, expose: true });
  if (error instanceof ReaderBusyError)
    return new HttpError(429, error.message, {
      code: 'too_many_queries',
      ...cause,
      headers: { 'retry-after': '1' },
    });
  if (error instanceof ReaderClosedError)
    return new HttpError(503, error.message, { code: 'shutting_down', ...cause });
  if (error instanceof ReaderThreadError)
    return new HttpError(503, error.message, { code: 'query_thread_failed', ...cause, expose: true });
  return new HttpError(500, 'internal error', { code: 'internal', ...cause });
}

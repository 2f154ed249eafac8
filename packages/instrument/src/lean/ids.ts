import { randomFillSync } from 'node:crypto';

/** Random bytes drawn in bulk; ids are cut from the pool as hex. */
const POOL_SIZE = 8192;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);

function take(bytes: number): string {
  if (offset + bytes > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const id = pool.toString('hex', offset, offset + bytes);
  offset += bytes;
  // an all-zero id is invalid: draw again (one chance in 2^64 or 2^128)
  return id === ZERO_TRACE_ID || id === ZERO_SPAN_ID ? take(bytes) : id;
}

/** A random 16-byte trace id (32 hex characters). */
export function newTraceId(): string {
  return take(16);
}

/** A random 8-byte span id (16 hex characters). */
export function newSpanId(): string {
  return take(8);
}

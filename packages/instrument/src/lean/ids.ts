import { randomFillSync } from 'node:crypto';

/** Random bytes drawn in bulk and turned into hex once; ids are cut from that string. */
const POOL_BYTES = 8192;
const pool = Buffer.alloc(POOL_BYTES);
let hex = '';
let offset = Infinity;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);

/**
 * `chars` random hex characters. A slice of the pool's hex string is O(1) in V8 (a sliced string
 * over the pool's), where `Buffer#toString('hex', …)` per id is a native call and a copy.
 */
function take(chars: number): string {
  if (offset + chars > hex.length) {
    randomFillSync(pool);
    hex = pool.toString('hex');
    offset = 0;
  }
  const id = hex.slice(offset, offset + chars);
  offset += chars;
  // an all-zero id is invalid: draw again (one chance in 2^64 or 2^128)
  return id === ZERO_TRACE_ID || id === ZERO_SPAN_ID ? take(chars) : id;
}

/** A random 16-byte trace id (32 hex characters). */
export function newTraceId(): string {
  return take(32);
}

/** A random 8-byte span id (16 hex characters). */
export function newSpanId(): string {
  return take(16);
}

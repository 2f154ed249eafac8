/**
 * The protobuf wire format written into one reused buffer: varints, fixed-width numbers,
 * length-prefixed strings and bytes, and messages whose length is patched in after their content.
 * Encoders take the writer as a parameter: one class, so every call site stays monomorphic and V8
 * inlines the small methods. (Plain functions over this module's state, imported by the encoders,
 * measured 3-5% slower than when all was one module: each call loads its import first.)
 *
 * A tag byte is `field << 3 | wireType`; every tag passed here is below 0x80 (one byte) unless its
 * method says otherwise.
 */
import type { HrTime } from '@opentelemetry/api';

/** The buffer's first size; one grown past KEEP_SIZE by a big batch is dropped after it. */
const INITIAL_SIZE = 256 * 1024;
const KEEP_SIZE = 4 * 1024 * 1024;

export class ProtobufWriter {
  /** The bytes written so far are `buf[0, pos)`; encoders that fill it directly move `pos` past them. */
  buf = Buffer.alloc(0); // allocated by the first encoding
  pos = 0;

  /**
   * Runs `write` on an empty buffer and returns what it wrote as a fresh copy: the caller may keep it
   * (the transport does, for retries) while later encodings reuse the buffer.
   */
  encode(write: (writer: ProtobufWriter) => void): Uint8Array {
    this.pos = 0;
    try {
      write(this);
      const out = Buffer.allocUnsafe(this.pos);
      this.buf.copy(out, 0, 0, this.pos);
      return out;
    } finally {
      if (this.buf.length > KEEP_SIZE) this.buf = Buffer.alloc(0);
    }
  }

  /** Makes room for `n` more bytes at `pos` and returns the buffer to put them in. */
  reserve(n: number): Buffer {
    if (this.pos + n > this.buf.length) this.grow(this.pos + n);
    return this.buf;
  }

  private grow(needed: number): void {
    let size = Math.max(this.buf.length * 2, INITIAL_SIZE);
    while (size < needed) size *= 2;
    const next = Buffer.allocUnsafeSlow(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** A copy of the bytes written from `from` on. */
  copyOut(from: number): Uint8Array {
    const bytes = new Uint8Array(this.pos - from);
    this.buf.copy(bytes, 0, from, this.pos);
    return bytes;
  }

  // ---- messages ----------------------------------------------------------------------------------

  /**
   * Writes the tag byte of a length-delimited field and reserves `reserveBytes` bytes for the length
   * of the message that follows; {@link endMessage} writes it there, moving the message when its
   * length takes another number of bytes. Returns where the length goes.
   */
  beginMessage(tag: number, reserveBytes: number): number {
    const b = this.reserve(1 + reserveBytes);
    b[this.pos++] = tag;
    const start = this.pos;
    this.pos += reserveBytes;
    return start;
  }

  endMessage(start: number, reserveBytes: number): void {
    const length = this.pos - start - reserveBytes;
    const size = varintSize(length);
    if (size !== reserveBytes) {
      const b = this.reserve(size - reserveBytes);
      b.copy(b, start + size, start + reserveBytes, this.pos);
      this.pos += size - reserveBytes;
    }
    putVarint32(this.buf, start, length);
  }

  /** A tag byte, then `bytes` as they are (an encoded field body, length included). */
  writeTagged(tag: number, bytes: Uint8Array): void {
    const b = this.reserve(bytes.length + 1);
    b[this.pos++] = tag;
    b.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  // ---- scalar fields -----------------------------------------------------------------------------

  /** A varint field: its tag byte, then `value` as {@link writeVarint} writes it. */
  writeVarintField(tag: number, value: number): void {
    this.reserve(11)[this.pos++] = tag;
    this.writeVarint(value);
  }

  writeBoolField(tag: number, value: boolean): void {
    const b = this.reserve(2);
    b[this.pos++] = tag;
    b[this.pos++] = value ? 1 : 0;
  }

  writeDoubleField(tag: number, value: number): void {
    const b = this.reserve(9);
    b[this.pos++] = tag;
    b.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  /** A fixed32 field; its tag is written as a varint, so it may take two bytes (fields 16 and up). */
  writeFixed32Field(tag: number, value: number): void {
    this.pos = putVarint32(this.reserve(9), this.pos, tag);
    this.writeFixed32(value);
  }

  /**
   * A fixed64 field holding an HrTime as nanoseconds, computed as upstream does: seconds split at bit
   * 16 so every product stays below 2^53.
   */
  writeHrTimeField(tag: number, time: HrTime): void {
    const seconds = time[0];
    const nanos = time[1];
    const fromLow = (seconds & 0xffff) * 1e9;
    const fromHigh = ((seconds / 0x10000) >>> 0) * 1e9;
    const low = (fromLow >>> 0) + (((fromHigh & 0xffff) * 0x10000) >>> 0) + nanos;
    const high =
      (Math.floor(fromLow / 0x100000000) + ((fromHigh / 0x10000) >>> 0) + Math.floor(low / 0x100000000)) >>>
      0;
    this.reserve(9)[this.pos++] = tag;
    this.writeFixed32(low >>> 0);
    this.writeFixed32(high);
  }

  /** Four bytes, little-endian; room for them must be there. */
  private writeFixed32(value: number): void {
    const b = this.buf;
    let p = this.pos;
    b[p++] = value & 0xff;
    b[p++] = (value >>> 8) & 0xff;
    b[p++] = (value >>> 16) & 0xff;
    b[p++] = (value >>> 24) & 0xff;
    this.pos = p;
  }

  /**
   * Writes `value` as a varint the way upstream's ProtobufWriter does: numbers in [0, 2^32) by their
   * integer part, others as 64-bit two's complement (so negatives take 10 bytes, and undefined or NaN
   * a single 0). Room for 10 bytes must be there.
   */
  private writeVarint(value: number): void {
    if (value >= 0 && value <= 0xffffffff) {
      this.pos = putVarint32(this.buf, this.pos, value >>> 0);
      return;
    }
    let low: number;
    let high: number;
    if (value >= 0) {
      low = value >>> 0;
      high = (value / 0x100000000) >>> 0;
    } else {
      const abs = Math.abs(value);
      low = ~(abs >>> 0) >>> 0;
      high = ~((abs / 0x100000000) >>> 0) >>> 0;
      low = (low + 1) >>> 0;
      if (low === 0) high = (high + 1) >>> 0;
    }
    const b = this.buf;
    let p = this.pos;
    while (high > 0 || low > 0x7f) {
      b[p++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    b[p++] = low & 0x7f;
    this.pos = p;
  }

  // ---- length-delimited fields -------------------------------------------------------------------

  /** A bytes field: its tag byte, the length, the bytes. */
  writeBytesField(tag: number, bytes: Uint8Array): void {
    const b = this.reserve(11 + bytes.length);
    b[this.pos++] = tag;
    const p = putVarint32(b, this.pos, bytes.length);
    b.set(bytes, p);
    this.pos = p + bytes.length;
  }

  /** A bytes field holding a hex id's bytes (an odd last digit is dropped, as upstream). */
  writeHexIdField(tag: number, hex: string): void {
    const n = hex.length >>> 1;
    const b = this.reserve(n + 7);
    const values = HEX_VALUES;
    b[this.pos] = tag;
    let p = putVarint32(b, this.pos + 1, n);
    for (let i = 0; i < 2 * n; i += 2) {
      const hi = hex.charCodeAt(i);
      const lo = hex.charCodeAt(i + 1);
      b[p++] = ((hi < 256 ? values[hi]! : hi - 55) << 4) | (lo < 256 ? values[lo]! : lo - 55);
    }
    this.pos = p;
  }

  /** A string field: its tag byte, then UTF-8 length-prefixed (lone surrogates as U+FFFD, as TextEncoder). */
  writeStringField(tag: number, s: string): void {
    const b = this.reserve(3 * s.length + 6);
    const ascii = putAsciiField(b, this.pos, tag, s);
    if (ascii >= 0) {
      this.pos = ascii;
      return;
    }
    const length = Buffer.byteLength(s, 'utf8');
    const p = putVarint32(b, this.pos + 1, length);
    b.write(s, p, 'utf8');
    this.pos = p + length;
  }
}

// ---- sizes and unchecked writes, for encoders that fill the buffer directly ----------------------

/** The encoded size of a varint below 2^32. */
export function varintSize(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
}

/** The encoded size of `value` (an integer in the int64 range) as a varint field writes it. */
export function int64Size(value: number): number {
  if (value >= 0 && value <= 0xffffffff) return varintSize(value);
  if (value < 0) return 10;
  let size = 5;
  for (let v = Math.floor(value / 2 ** 35); v > 0; v = Math.floor(v / 128)) size++;
  return size;
}

/** Writes `v` (an integer in [0, 2^32)) as a varint at `p` of `b`; returns the position after it. */
export function putVarint32(b: Buffer, p: number, v: number): number {
  while (v > 0x7f) {
    b[p++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  b[p++] = v;
  return p;
}

/**
 * Puts a string field (tag byte, length, chars) at `p` of `b` if `s` is all ASCII and returns the
 * position after it, or -1 (with garbage written) if it is not; room as for {@link putAscii}.
 */
export function putAsciiField(b: Buffer, p: number, tag: number, s: string): number {
  b[p++] = tag;
  p = putVarint32(b, p, s.length);
  return putAscii(b, p, s) ? p + s.length : -1;
}

/** Strings at least this long are written by Buffer#write, shorter ones by a loop. */
const NATIVE_WRITE_MIN = 16;

/**
 * Copies `s` to `p` if it is all ASCII and returns whether it was; room for 3 bytes a char must be
 * there. On false, what was written is garbage for the caller to overwrite. A UTF-8 write takes as
 * many bytes as chars only for ASCII: any other char takes more bytes than UTF-16 units.
 */
function putAscii(b: Buffer, p: number, s: string): boolean {
  const n = s.length;
  if (n >= NATIVE_WRITE_MIN) return b.write(s, p) === n;
  let bits = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    bits |= c;
    b[p + i] = c;
  }
  return bits < 0x80;
}

/** A digit's value as upstream's hexToBinary reads it (anything that is not 0-9 or a-f as A-F). */
function hexValue(c: number): number {
  return c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c - 55;
}

/** {@link hexValue} of the chars below 256, looked up rather than branched on (digits come at random). */
const HEX_VALUES = Int32Array.from({ length: 256 }, (_, c) => hexValue(c));

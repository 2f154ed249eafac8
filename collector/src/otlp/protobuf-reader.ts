import { OtlpDecodeError } from './otlp-decode-error.js';

const TWO_32 = 4294967296;

/**
 * A minimal protobuf wire-format reader over one byte range. Every read checks bounds and throws
 * OtlpDecodeError on truncated or malformed input, so hostile bytes end in a 400, never a crash.
 */
export class ProtobufReader {
  pos: number;
  readonly buf: Buffer;
  end: number;

  constructor(buf: Buffer, start = 0, end = buf.length) {
    this.buf = buf;
    this.pos = start;
    this.end = end;
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  /** Reads a varint up to 2^53 exactly (bigger values lose precision; negative int64 handled by int64()). */
  varint(): number {
    const buf = this.buf;
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new OtlpDecodeError('truncated varint');
      const b = buf[this.pos++]!;
      result += (b & 0x7f) * mul;
      if (b < 0x80) return result;
      mul *= 128;
    }
    throw new OtlpDecodeError('varint longer than 10 bytes');
  }

  /** Reads a signed int64 varint (two's complement) as a number. */
  int64(): number {
    let lo = 0;
    let hi: number;
    let b: number;
    for (let i = 0; i < 4; i++) {
      b = this.byte();
      lo = (lo | ((b & 0x7f) << (i * 7))) >>> 0;
      if (b < 0x80) return lo;
    }
    b = this.byte();
    lo = (lo | ((b & 0x7f) << 28)) >>> 0;
    hi = (b & 0x7f) >> 4;
    if (b < 0x80) return hi * TWO_32 + lo;
    for (let i = 0; i < 5; i++) {
      b = this.byte();
      hi = (hi | ((b & 0x7f) << (i * 7 + 3))) >>> 0;
      if (b < 0x80) return (hi | 0) * TWO_32 + lo;
    }
    throw new OtlpDecodeError('varint longer than 10 bytes');
  }

  private byte(): number {
    if (this.pos >= this.end) throw new OtlpDecodeError('truncated varint');
    return this.buf[this.pos++]!;
  }

  /** Reads a tag; returns field number * 8 + wire type packed as in the wire format. */
  tag(): number {
    return this.varint();
  }

  fixed32(): number {
    if (this.pos + 4 > this.end) throw new OtlpDecodeError('truncated fixed32');
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  /** Reads a fixed64 as [hi, lo] uint32 halves (written into `out`) and returns it as a number. */
  fixed64(out?: Uint32Array): number {
    if (this.pos + 8 > this.end) throw new OtlpDecodeError('truncated fixed64');
    const lo = this.buf.readUInt32LE(this.pos);
    const hi = this.buf.readUInt32LE(this.pos + 4);
    this.pos += 8;
    if (out) {
      out[0] = hi;
      out[1] = lo;
    }
    return hi * TWO_32 + lo;
  }

  double(): number {
    if (this.pos + 8 > this.end) throw new OtlpDecodeError('truncated double');
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  /** Reads a length prefix and returns the [start, end) of the delimited bytes, advancing past them. */
  delimited(): number {
    const len = this.varint();
    const start = this.pos;
    if (len > this.end - start)
      throw new OtlpDecodeError('length-delimited field runs past the end of its message');
    this.pos = start + len;
    return start;
  }

  string(): string {
    const start = this.delimited();
    // One native call, even for short keys and names: building them in JS char by char was slower
    // (and left cons strings that V8 flattens again to use them as property keys).
    return this.buf.toString('utf8', start, this.pos);
  }

  /** Reads bytes as lowercase hex. */
  hex(): string {
    const start = this.delimited();
    return this.buf.toString('hex', start, this.pos);
  }

  base64(): string {
    const start = this.delimited();
    return this.buf.toString('base64', start, this.pos);
  }

  /**
   * Narrows this reader to the length-delimited sub-message that follows; returns the outer end for
   * leave(). Cheaper than sub() on hot paths (no object); the sub-message must be read to its end.
   */
  enter(): number {
    const start = this.delimited();
    const outer = this.end;
    this.end = this.pos;
    this.pos = start;
    return outer;
  }

  /** Widens the reader back after enter(), positioned just past the sub-message. */
  leave(outer: number): void {
    this.pos = this.end;
    this.end = outer;
  }

  /** A reader over the sub-message that follows (length-delimited). */
  sub(): ProtobufReader {
    const start = this.delimited();
    return new ProtobufReader(this.buf, start, this.pos);
  }

  /** Skips one field of the given wire type (unknown fields are ignored, as protobuf requires). */
  skip(wireType: number): void {
    switch (wireType) {
      case 0:
        this.varint();
        return;
      case 1:
        if (this.pos + 8 > this.end) throw new OtlpDecodeError('truncated fixed64');
        this.pos += 8;
        return;
      case 2:
        this.delimited();
        return;
      case 5:
        if (this.pos + 4 > this.end) throw new OtlpDecodeError('truncated fixed32');
        this.pos += 4;
        return;
      default:
        // Groups (3/4) are deprecated and never used by OTLP; anything else is corruption.
        throw new OtlpDecodeError(`unsupported wire type ${wireType} at byte ${this.pos}`);
    }
  }
}

/** Lowercase hex of bytes, for callers converting base64 ids. */
export function bytesToHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

// One request's rows as a spool frame's payload (spool.ts): its spans' and logs' RowBinary rows,
// where each span row ends and which (trace id, span id) it is — so the shipper can leave out a
// span ClickHouse holds already without decoding the rows.
import type { EncodedRows } from './row-binary.js';

/** A frame's parts, as the shipper reads them back. */
export interface SpoolFrame {
  spans: EncodedRows & { keys: string[] };
  logs: Buffer;
  logRows: number;
}

const HEAD = 16;

/** The payload of a frame: counts, span row ends and keys, then the span rows and the log rows. */
export function encodeFrame(spans: EncodedRows & { keys: string[] }, logs: EncodedRows): Buffer {
  const n = spans.rowEnds.length;
  let keyBytes = 0;
  for (const k of spans.keys) keyBytes += 2 + Buffer.byteLength(k);
  const out = Buffer.allocUnsafe(HEAD + 4 * n + keyBytes + spans.bytes.length + logs.bytes.length);
  out.writeUInt32LE(n, 0);
  out.writeUInt32LE(logs.rowEnds.length, 4);
  out.writeUInt32LE(spans.bytes.length, 8);
  out.writeUInt32LE(logs.bytes.length, 12);
  let at = HEAD;
  for (const end of spans.rowEnds) at = out.writeUInt32LE(end, at);
  for (const k of spans.keys) {
    const len = out.write(k, at + 2);
    out.writeUInt16LE(len, at);
    at += 2 + len;
  }
  at += spans.bytes.copy(out, at);
  logs.bytes.copy(out, at);
  return out;
}

/** Rows a payload holds (spans and logs). */
export const frameRows = (payload: Buffer): number => payload.readUInt32LE(0) + payload.readUInt32LE(4);

/** A payload's parts (views into it, not copies). */
export function decodeFrame(payload: Buffer): SpoolFrame {
  const n = payload.readUInt32LE(0);
  const logRows = payload.readUInt32LE(4);
  const spanBytes = payload.readUInt32LE(8);
  const logBytes = payload.readUInt32LE(12);
  const rowEnds: number[] = [];
  let at = HEAD;
  for (let i = 0; i < n; i++, at += 4) rowEnds.push(payload.readUInt32LE(at));
  const keys: string[] = [];
  for (let i = 0; i < n; i++) {
    const len = payload.readUInt16LE(at);
    keys.push(payload.toString('latin1', at + 2, at + 2 + len));
    at += 2 + len;
  }
  const bytes = payload.subarray(at, at + spanBytes);
  const logs = payload.subarray(at + spanBytes, at + spanBytes + logBytes);
  return { spans: { bytes, rowEnds, keys }, logs, logRows };
}

// The ClickHouse store's write-ahead spool: ingest acknowledges a request once its rows are appended
// to a local segment file and fsynced (as SQLite acknowledges a commit), and the shipper
// (clickhouse-shipper.ts) sends them on, oldest first; a frame leaves the spool only once ClickHouse
// has acknowledged its INSERT. A frame is [magic][length][crc32][payload]: a torn or damaged frame
// is found at start, reported with its file and offset, and skipped; the frames after it are kept.
import {
  closeSync,
  fdatasync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Logger } from '../../logger.js';

const MAGIC = 0x31_4c_50_53; // 'SPL1' little-endian
const HEADER = 12;
/** A segment file is closed for appends past this size; it is deleted once all its frames shipped. */
const SEGMENT_BYTES = 16 * 1024 * 1024;
const ACK_FILE = 'acked';

/** One spooled frame not shipped yet. */
export interface SpoolEntry {
  seq: number;
  segment: string;
  /** Where its payload starts in the segment, and its length. */
  offset: number;
  length: number;
  /** Rows it holds (the shipper's batch size counts them). */
  rows: number;
  /** When it was appended (performance.now(); 0 for what a previous run left). */
  atMs: number;
}

export interface SpoolOptions {
  dir: string;
  /** Unshipped bytes past which appends are refused (ingest answers 503 + Retry-After). */
  maxBytes: number;
  logger: Logger;
  /** A segment file takes appends up to this size (default 16 MiB). */
  segmentBytes?: number;
}

const segmentName = (n: number): string => `${String(n).padStart(10, '0')}.spool`;

/** Frames of a segment file as found at start: the sound ones, and the byte ranges lost. */
function scan(
  file: Buffer,
  from: number,
): { frames: { offset: number; length: number }[]; lost: [number, number][] } {
  const frames: { offset: number; length: number }[] = [];
  const lost: [number, number][] = [];
  let at = from;
  let lostFrom = -1;
  while (at + HEADER <= file.length) {
    const length = file.readUInt32LE(at + 4);
    const sound =
      file.readUInt32LE(at) === MAGIC &&
      at + HEADER + length <= file.length &&
      crc32(file.subarray(at + HEADER, at + HEADER + length)) === file.readUInt32LE(at + 8);
    if (!sound) {
      if (lostFrom < 0) lostFrom = at;
      // Resynchronize on the next magic number: the frames after a damaged one are kept.
      at = file.indexOf(Buffer.from([0x53, 0x50, 0x4c, 0x31]), at + 1);
      if (at < 0) at = file.length;
      continue;
    }
    if (lostFrom >= 0) lost.push([lostFrom, at]);
    lostFrom = -1;
    frames.push({ offset: at + HEADER, length });
    at += HEADER + length;
  }
  if (lostFrom >= 0 || at < file.length) lost.push([lostFrom >= 0 ? lostFrom : at, file.length]);
  return { frames, lost };
}

/** The spool as the ClickHouse writer and its shipper use it. */
export interface Spool {
  /** Frames not shipped yet, oldest first (the shipper reads and acks from the front). */
  readonly entries: SpoolEntry[];
  readonly bytes: number;
  /** Why appends are refused now (the spool is at its limit, or its disk failed), or undefined. */
  refusal(): string | undefined;
  /** Appends a payload; resolves once it is on disk. */
  append(payload: Buffer, rows: number): Promise<void>;
  /** A spooled frame's payload (from the page cache, mostly). */
  read(e: SpoolEntry): Buffer;
  /**
   * Drops the first `n` entries (ClickHouse acknowledged them): the mark of the first one left is
   * written, and segments wholly shipped are deleted.
   */
  ack(n: number): void;
  /** Waits for the appends' last sync, closes the files. */
  close(): Promise<void>;
}

/** An open spool: its frames, the segment taking appends, and the group sync's state. */
interface SpoolState {
  options: SpoolOptions;
  entries: SpoolEntry[];
  readFds: Map<string, number>;
  seq: number;
  /** Bytes of the frames not shipped yet (headers included). */
  bytes: number;
  /** The number of the segment taking appends, its name, its file and its size. */
  lastNumber: number;
  current: string;
  fd: number;
  size: number;
  syncing: Promise<void> | undefined;
  /** Appends waiting for the next group sync. */
  waiting: (() => void)[];
  /** Why the disk refuses appends (a failed fsync), for good. */
  failure: Error | undefined;
}

/** Opens the spool in `dir` (created when missing), finding what a previous run left unshipped. */
export function openSpool(options: SpoolOptions, rowsOf: (payload: Buffer) => number): Spool {
  mkdirSync(options.dir, { recursive: true });
  const found = recover(options, rowsOf);
  const current = segmentName(found.lastNumber + 1);
  const s: SpoolState = {
    options,
    entries: found.entries,
    readFds: new Map(),
    seq: found.entries.at(-1)?.seq ?? 0,
    bytes: found.bytes,
    lastNumber: found.lastNumber + 1,
    current,
    fd: openSync(join(options.dir, current), 'a'),
    size: 0,
    syncing: undefined,
    waiting: [],
    failure: undefined,
  };
  return {
    entries: s.entries,
    get bytes(): number {
      return s.bytes;
    },
    refusal: () => refusal(s),
    append: (payload, rows) => append(s, payload, rows),
    read: (e) => read(s, e),
    ack: (n) => ack(s, n),
    close: () => close(s),
  };
}

/** The ack mark a previous run left: the segment and offset of the first frame not shipped. */
function ackMark(dir: string): [segment: string, offset: number] {
  const [segment = '', offset = '0'] = (() => {
    try {
      return readFileSync(join(dir, ACK_FILE), 'utf8').trim().split(' ');
    } catch {
      return [];
    }
  })();
  return [segment, Number(offset)];
}

/**
 * What a previous run left unshipped: the sound frames from the ack mark on (a damaged one is
 * logged and skipped), their bytes, and the last segment's number; segments before the mark are
 * deleted.
 */
function recover(
  options: SpoolOptions,
  rowsOf: (payload: Buffer) => number,
): { entries: SpoolEntry[]; bytes: number; lastNumber: number } {
  const entries: SpoolEntry[] = [];
  let bytes = 0;
  const [ackedSegment, ackedOffset] = ackMark(options.dir);
  const segments = readdirSync(options.dir)
    .filter((f) => f.endsWith('.spool'))
    .sort();
  for (const segment of segments) {
    if (segment < ackedSegment) {
      unlinkSync(join(options.dir, segment));
      continue;
    }
    const file = readFileSync(join(options.dir, segment));
    const { frames, lost } = scan(file, segment === ackedSegment ? ackedOffset : 0);
    for (const [from, to] of lost)
      options.logger.error('spool: a damaged batch is lost; the batches after it are kept', {
        file: join(options.dir, segment),
        offset: from,
        bytes: to - from,
      });
    for (const f of frames) {
      const rows = rowsOf(file.subarray(f.offset, f.offset + f.length));
      entries.push({ seq: entries.length + 1, segment, ...f, rows, atMs: 0 });
      bytes += f.length + HEADER;
    }
  }
  return { entries, bytes, lastNumber: segments.length ? Number.parseInt(segments.at(-1)!, 10) : 0 };
}

function refusal(s: SpoolState): string | undefined {
  if (s.failure) return s.failure.message;
  if (s.bytes >= s.options.maxBytes)
    return `the spool holds ${Math.round(s.bytes / 1048576)} MiB not yet in ClickHouse (its limit)`;
  return undefined;
}

function append(s: SpoolState, payload: Buffer, rows: number): Promise<void> {
  const refused = refusal(s);
  if (refused) return Promise.reject(new Error(refused));
  if (s.size >= (s.options.segmentBytes ?? SEGMENT_BYTES)) rotate(s);
  const header = Buffer.allocUnsafe(HEADER);
  header.writeUInt32LE(MAGIC, 0);
  header.writeUInt32LE(payload.length, 4);
  header.writeUInt32LE(crc32(payload), 8);
  writeSync(s.fd, header);
  writeSync(s.fd, payload);
  s.entries.push({
    seq: ++s.seq,
    segment: s.current,
    offset: s.size + HEADER,
    length: payload.length,
    rows,
    atMs: performance.now(),
  });
  s.size += HEADER + payload.length;
  s.bytes += HEADER + payload.length;
  return new Promise<void>((resolve, reject) => {
    s.waiting.push(() => (s.failure ? reject(s.failure) : resolve()));
    sync(s);
  });
}

/** One fdatasync for every append made since the last began (group commit). */
function sync(s: SpoolState): void {
  if (s.syncing || !s.waiting.length) return;
  const done = s.waiting;
  s.waiting = [];
  s.syncing = new Promise<void>((resolve) => {
    fdatasync(s.fd, (error) => {
      // A failed fsync leaves the spool's durability unknown: refuse appends from now on.
      if (error) s.failure = new Error(`the spool could not be synced to disk: ${error.message}`);
      for (const d of done) d();
      resolve();
    });
  }).then(() => {
    s.syncing = undefined;
    sync(s);
  });
}

/**
 * Starts a new segment. What was appended to the old one is synced here (the appends waiting for
 * the next group sync are then durable already), and the old file is closed only once a sync
 * still running on it has finished: closing it under that sync failed it (EBADF) and refused
 * every append after.
 */
function rotate(s: SpoolState): void {
  const old = s.fd;
  fsyncSync(old);
  if (s.syncing) void s.syncing.then(() => closeSync(old));
  else closeSync(old);
  s.current = segmentName(++s.lastNumber);
  s.fd = openSync(join(s.options.dir, s.current), 'a');
  s.size = 0;
}

function read(s: SpoolState, e: SpoolEntry): Buffer {
  let rfd = s.readFds.get(e.segment);
  if (rfd === undefined) s.readFds.set(e.segment, (rfd = openSync(join(s.options.dir, e.segment), 'r')));
  const out = Buffer.allocUnsafe(e.length);
  readSync(rfd, out, 0, e.length, e.offset);
  return out;
}

function ack(s: SpoolState, n: number): void {
  const done = s.entries.splice(0, n);
  for (const e of done) s.bytes -= e.length + HEADER;
  const next = s.entries[0];
  const mark = next ? `${next.segment} ${next.offset - HEADER}` : `${s.current} ${s.size}`;
  const tmp = join(s.options.dir, `${ACK_FILE}.tmp`);
  writeFileSync(tmp, mark);
  renameSync(tmp, join(s.options.dir, ACK_FILE));
  deleteShipped(s, done, next?.segment ?? s.current);
}

/** Deletes the segments of these shipped entries before `keep` (the first segment with frames left). */
function deleteShipped(s: SpoolState, done: SpoolEntry[], keep: string): void {
  for (const e of done) {
    if (e.segment >= keep) continue;
    const r = s.readFds.get(e.segment);
    if (r !== undefined) closeSync(r);
    s.readFds.delete(e.segment);
    try {
      unlinkSync(join(s.options.dir, e.segment));
    } catch {
      // Deleted already with an earlier entry of the same segment.
    }
  }
}

async function close(s: SpoolState): Promise<void> {
  while (s.syncing) await s.syncing;
  fsyncSync(s.fd);
  closeSync(s.fd);
  for (const r of s.readFds.values()) closeSync(r);
  s.readFds.clear();
  if (!statSync(join(s.options.dir, s.current)).size) unlinkSync(join(s.options.dir, s.current));
}

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

/** Opens the spool in `dir` (created when missing), finding what a previous run left unshipped. */
export function openSpool(options: SpoolOptions, rowsOf: (payload: Buffer) => number) {
  mkdirSync(options.dir, { recursive: true });
  const entries: SpoolEntry[] = [];
  const readFds = new Map<string, number>();
  let seq = 0;
  let bytes = 0;
  const [ackedSegment = '', ackedOffset = '0'] = (() => {
    try {
      return readFileSync(join(options.dir, ACK_FILE), 'utf8').trim().split(' ');
    } catch {
      return [];
    }
  })();
  const segments = readdirSync(options.dir)
    .filter((f) => f.endsWith('.spool'))
    .sort();
  for (const segment of segments) {
    if (segment < ackedSegment) {
      unlinkSync(join(options.dir, segment));
      continue;
    }
    const file = readFileSync(join(options.dir, segment));
    const { frames, lost } = scan(file, segment === ackedSegment ? Number(ackedOffset) : 0);
    for (const [from, to] of lost)
      options.logger.error('spool: a damaged batch is lost; the batches after it are kept', {
        file: join(options.dir, segment),
        offset: from,
        bytes: to - from,
      });
    for (const f of frames) {
      const rows = rowsOf(file.subarray(f.offset, f.offset + f.length));
      entries.push({ seq: ++seq, segment, ...f, rows, atMs: 0 });
      bytes += f.length + HEADER;
    }
  }
  let lastNumber = segments.length ? Number.parseInt(segments.at(-1)!, 10) : 0;
  let current = segmentName(++lastNumber);
  let fd = openSync(join(options.dir, current), 'a');
  let size = 0;
  let syncing: Promise<void> | undefined;
  let waiting: (() => void)[] = [];
  let failure: Error | undefined;

  /** One fdatasync for every append made since the last began (group commit). */
  function sync(): void {
    if (syncing || !waiting.length) return;
    const done = waiting;
    waiting = [];
    syncing = new Promise<void>((resolve) => {
      fdatasync(fd, (error) => {
        // A failed fsync leaves the spool's durability unknown: refuse appends from now on.
        if (error) failure = new Error(`the spool could not be synced to disk: ${error.message}`);
        for (const d of done) d();
        resolve();
      });
    }).then(() => {
      syncing = undefined;
      sync();
    });
  }

  /**
   * Starts a new segment. What was appended to the old one is synced here (the appends waiting for
   * the next group sync are then durable already), and the old file is closed only once a sync
   * still running on it has finished: closing it under that sync failed it (EBADF) and refused
   * every append after.
   */
  function rotate(): void {
    const old = fd;
    fsyncSync(old);
    if (syncing) void syncing.then(() => closeSync(old));
    else closeSync(old);
    current = segmentName(++lastNumber);
    fd = openSync(join(options.dir, current), 'a');
    size = 0;
  }

  const full = (): boolean => bytes >= options.maxBytes;

  return {
    /** Frames not shipped yet, oldest first (the shipper reads and acks from the front). */
    entries,
    get bytes(): number {
      return bytes;
    },
    /** Why appends are refused now (the spool is at its limit, or its disk failed), or undefined. */
    refusal(): string | undefined {
      if (failure) return failure.message;
      if (full())
        return `the spool holds ${Math.round(bytes / 1048576)} MiB not yet in ClickHouse (its limit)`;
      return undefined;
    },
    /** Appends a payload; resolves once it is on disk. */
    append(payload: Buffer, rows: number): Promise<void> {
      const refused = this.refusal();
      if (refused) return Promise.reject(new Error(refused));
      if (size >= (options.segmentBytes ?? SEGMENT_BYTES)) rotate();
      const header = Buffer.allocUnsafe(HEADER);
      header.writeUInt32LE(MAGIC, 0);
      header.writeUInt32LE(payload.length, 4);
      header.writeUInt32LE(crc32(payload), 8);
      writeSync(fd, header);
      writeSync(fd, payload);
      entries.push({
        seq: ++seq,
        segment: current,
        offset: size + HEADER,
        length: payload.length,
        rows,
        atMs: performance.now(),
      });
      size += HEADER + payload.length;
      bytes += HEADER + payload.length;
      return new Promise<void>((resolve, reject) => {
        waiting.push(() => (failure ? reject(failure) : resolve()));
        sync();
      });
    },
    /** A spooled frame's payload (from the page cache, mostly). */
    read(e: SpoolEntry): Buffer {
      let rfd = readFds.get(e.segment);
      if (rfd === undefined) readFds.set(e.segment, (rfd = openSync(join(options.dir, e.segment), 'r')));
      const out = Buffer.allocUnsafe(e.length);
      readSync(rfd, out, 0, e.length, e.offset);
      return out;
    },
    /**
     * Drops the first `n` entries (ClickHouse acknowledged them): the mark of the first one left is
     * written, and segments wholly shipped are deleted.
     */
    ack(n: number): void {
      const done = entries.splice(0, n);
      for (const e of done) bytes -= e.length + HEADER;
      const next = entries[0];
      const mark = next ? `${next.segment} ${next.offset - HEADER}` : `${current} ${size}`;
      const tmp = join(options.dir, `${ACK_FILE}.tmp`);
      writeFileSync(tmp, mark);
      renameSync(tmp, join(options.dir, ACK_FILE));
      const keep = next?.segment ?? current;
      for (const e of done) {
        if (e.segment >= keep) continue;
        const r = readFds.get(e.segment);
        if (r !== undefined) closeSync(r);
        readFds.delete(e.segment);
        try {
          unlinkSync(join(options.dir, e.segment));
        } catch {
          // Deleted already with an earlier entry of the same segment.
        }
      }
    },
    /** Waits for the appends' last sync, closes the files. */
    async close(): Promise<void> {
      while (syncing) await syncing;
      fsyncSync(fd);
      closeSync(fd);
      for (const r of readFds.values()) closeSync(r);
      readFds.clear();
      if (!statSync(join(options.dir, current)).size) unlinkSync(join(options.dir, current));
    },
  };
}

export type Spool = ReturnType<typeof openSpool>;

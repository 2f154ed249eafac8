// Sends what the spool (spool.ts) holds to ClickHouse, oldest first, in large batches: as many
// frames as make `maxRows` rows, once `flushRows` wait or the oldest has waited `maxDelayMs` (or a
// read asks for it: flush). One INSERT per table in RowBinary; a span ClickHouse holds already (an
// exporter's retry) is left out; the frames leave the spool only once both INSERTs were answered.
// A failure is retried with back-off, the spool absorbing ingest meanwhile.
import type { Logger } from '../../logger.js';
import { addRowDays } from './row-binary.js';
import { type SpoolFrame, decodeFrame } from './spool-frame.js';
import type { Spool } from './spool.js';

export interface ShipperOptions {
  spool: Spool;
  logger: Logger;
  /** INSERTs a RowBinary body into `table` ('spans' or 'logs'). */
  insert(table: 'spans' | 'logs', body: Buffer): Promise<void>;
  /**
   * Which of these `trace/span` keys ClickHouse holds already (of these traces); with the batch's
   * partition `days`, the thorough lookup for frames an INSERT may have left half written.
   */
  stored(traceIds: string[], days?: string[]): Promise<Set<string>>;
  /**
   * Rows that start a batch at once (default 20 000). An INSERT costs ClickHouse 18.16 about 120 ms
   * of CPU whatever its size (a part per table, six views): 17 ms per 1000 spans in 10 000-row
   * INSERTs, 11 in 50 000-row ones (bench/collector/clickhouse.mjs).
   */
  flushRows?: number;
  /** Rows per batch at most (default 50 000, ~50 MB of rows; a bigger frame goes alone). */
  maxRows?: number;
  /** How long the oldest frame waits for others (default 1000 ms). */
  maxDelayMs?: number;
  /** Batches in flight at once (default 2): one's INSERTs overlap the next one's lookup. */
  parallel?: number;
  /** A failed batch is retried after this, doubled up to 10 s (default 250 ms). */
  retryMs?: number;
  /** Each batch shipped (rows; tests and /healthz). */
  onShipped?(rows: number): void;
  /** A batch failed (ClickHouse down, or refusing): the error. */
  onFailure?(error: Error): void;
}

/** The rows of these frames for one INSERT per table; spans already stored, or twice here, left out. */
function bodiesOf(frames: SpoolFrame[], stored: Set<string>): { spans: Buffer; logs: Buffer; rows: number } {
  const spanParts: Buffer[] = [];
  const logParts: Buffer[] = [];
  let rows = 0;
  for (const f of frames) {
    const { bytes, rowEnds, keys } = f.spans;
    let runStart = 0;
    for (let i = 0; i < rowEnds.length; i++) {
      const from = i ? rowEnds[i - 1]! : 0;
      if (stored.has(keys[i]!)) {
        if (from > runStart) spanParts.push(bytes.subarray(runStart, from));
        runStart = rowEnds[i]!;
        continue;
      }
      stored.add(keys[i]!);
      rows++;
    }
    if (bytes.length > runStart) spanParts.push(bytes.subarray(runStart));
    if (f.logs.length) logParts.push(f.logs);
    rows += f.logRows;
  }
  return { spans: Buffer.concat(spanParts), logs: Buffer.concat(logParts), rows };
}

/** The spool's shipper, as the ClickHouse writer drives it. */
export interface Shipper {
  /** A frame was appended: ships once enough rows wait or the oldest is due. */
  appended(): void;
  /** Ships what is spooled now; resolves once it is in ClickHouse (rejects with its failure). */
  flush(): Promise<void>;
  /** ClickHouse answers again: retry now rather than at the end of the back-off. */
  retryNow(): void;
  /** Rows spooled and not in ClickHouse yet (for /healthz). */
  readonly pendingRows: number;
  /** Ships what is spooled (for up to `timeoutMs`), then stops; what is left stays spooled. */
  close(timeoutMs?: number): Promise<void>;
}

/** A batch in flight: its head entries, the rows it sent, its span keys, and its INSERTs. */
interface Batch {
  count: number;
  rows: number;
  keys: string[];
  done: Promise<void>;
}

/** A flush waiting for the frames up to a seq. */
interface Flush {
  seq: number;
  resolve: () => void;
  reject: (e: Error) => void;
}

/** A shipper's settings and what it has in hand. */
interface ShipperState {
  options: ShipperOptions;
  spool: Spool;
  flushRows: number;
  maxRows: number;
  maxDelayMs: number;
  retryMs: number;
  parallel: number;
  timer: NodeJS.Timeout | undefined;
  running: Promise<void> | undefined;
  backoffMs: number;
  closed: boolean;
  flushes: Flush[];
  /** Head entries claimed by the batches in flight, and those batches in spool order. */
  claimed: number;
  pipeline: Batch[];
  /** The span keys of the batches in flight: a later batch leaves them out as if stored. */
  inFlight: Set<string>;
  /**
   * Frames up to this seq may be half written in ClickHouse (in flight when a batch failed, or left
   * by the last run): their batches take the thorough lookup.
   */
  suspectUntil: number;
}

/** Starts shipping; `flush()` ships what waits now and resolves once it is in ClickHouse. */
export function startShipper(options: ShipperOptions): Shipper {
  const { spool } = options;
  const s: ShipperState = {
    options,
    spool,
    flushRows: options.flushRows ?? 20_000,
    maxRows: options.maxRows ?? 50_000,
    maxDelayMs: options.maxDelayMs ?? 1000,
    retryMs: options.retryMs ?? 250,
    parallel: options.parallel ?? 2,
    timer: undefined,
    running: undefined,
    backoffMs: 0,
    closed: false,
    flushes: [],
    claimed: 0,
    pipeline: [],
    inFlight: new Set(),
    suspectUntil: spool.entries.at(-1)?.seq ?? -1,
  };
  if (spool.entries.length)
    options.logger.info('spool: shipping what the last run left first', { batches: spool.entries.length });
  schedule(s);
  return shipperOf(s);
}

function shipperOf(s: ShipperState): Shipper {
  return {
    appended(): void {
      if (!s.backoffMs) schedule(s);
    },
    flush: () => flush(s),
    retryNow(): void {
      if (!s.backoffMs) return;
      s.backoffMs = 0;
      schedule(s);
    },
    get pendingRows(): number {
      return pendingRows(s.spool);
    },
    close: (timeoutMs = 5000) => close(s, timeoutMs),
  };
}

function flush(s: ShipperState): Promise<void> {
  const last = s.spool.entries.at(-1);
  if (!last) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    s.flushes.push({ seq: last.seq, resolve, reject });
    s.backoffMs = 0;
    schedule(s);
  });
}

async function close(s: ShipperState, timeoutMs: number): Promise<void> {
  const until = performance.now() + timeoutMs;
  let failed = false;
  while (s.spool.entries.length && performance.now() < until && !failed)
    await flush(s).catch(() => (failed = true));
  s.closed = true;
  clearTimeout(s.timer);
  await s.running;
}

function pendingRows(spool: Spool, from = 0): number {
  let n = 0;
  for (let i = from; i < spool.entries.length; i++) n += spool.entries[i]!.rows;
  return n;
}

/** How long until the oldest frame not in flight is due (0: now). */
function dueInMs(s: ShipperState): number {
  return s.flushes.length || pendingRows(s.spool, s.claimed) >= s.flushRows
    ? 0
    : Math.max(0, s.maxDelayMs - (performance.now() - (s.spool.entries[s.claimed]?.atMs ?? 0)));
}

/** Runs a drain now, or sets the timer for when the oldest frame falls due (or the back-off ends). */
function schedule(s: ShipperState): void {
  clearTimeout(s.timer);
  if (s.running || s.closed || !s.spool.entries.length) return;
  const waitMs = s.backoffMs || dueInMs(s);
  if (waitMs > 0) {
    s.timer = setTimeout(() => {
      s.backoffMs = 0;
      schedule(s);
    }, waitMs);
    s.timer.unref();
    return;
  }
  s.running = drain(s).finally(() => {
    s.running = undefined;
    schedule(s);
  });
}

/**
 * Keeps up to `parallel` batches in flight while frames are due (a batch's INSERTs overlap the
 * next one's lookup and encoding), and drops each from the spool in order once ClickHouse has it.
 * A failure fails every batch in flight: they are sent again after the back-off (their spans are
 * found stored and left out).
 */
async function drain(s: ShipperState): Promise<void> {
  for (;;) {
    while (
      !s.closed &&
      s.pipeline.length < s.parallel &&
      s.claimed < s.spool.entries.length &&
      dueInMs(s) === 0
    )
      startBatch(s);
    const head = s.pipeline[0];
    if (!head) return;
    try {
      await head.done;
    } catch (error) {
      return failAll(s, error as Error);
    }
    landed(s, head);
  }
}

/** Claims the next frames (up to maxRows) and starts sending them. */
function startBatch(s: ShipperState): void {
  const { spool } = s;
  let count = 0;
  for (let rows = 0; s.claimed + count < spool.entries.length; count++) {
    const e = spool.entries[s.claimed + count]!;
    if (count && rows + e.rows > s.maxRows) break;
    rows += e.rows;
  }
  const thorough = spool.entries[s.claimed]!.seq <= s.suspectUntil;
  const frames = spool.entries.slice(s.claimed, s.claimed + count).map((e) => decodeFrame(spool.read(e)));
  const keys = frames.flatMap((f) => f.spans.keys);
  const earlier = new Set(s.inFlight);
  for (const k of keys) s.inFlight.add(k);
  s.claimed += count;
  const job: Batch = { count, rows: 0, keys, done: Promise.resolve() };
  job.done = ship(s.options, frames, earlier, thorough).then((rows) => {
    job.rows = rows;
  });
  // Awaited in order by drain(); a later batch failing first is not an unhandled rejection.
  job.done.catch(() => undefined);
  s.pipeline.push(job);
}

/** Sends one batch's rows: the spans ClickHouse or an earlier batch in flight holds left out. */
async function ship(
  options: ShipperOptions,
  frames: SpoolFrame[],
  earlier: Set<string>,
  thorough: boolean,
): Promise<number> {
  const traceIds = [...new Set(frames.flatMap((f) => f.spans.keys.map((k) => k.slice(0, k.indexOf('/')))))];
  const days = new Set<string>();
  if (thorough) for (const f of frames) addRowDays(f.spans.bytes, f.spans.rowEnds, days);
  const stored = traceIds.length
    ? await options.stored(traceIds, thorough ? [...days] : undefined)
    : new Set<string>();
  for (const k of earlier) stored.add(k);
  const bodies = bodiesOf(frames, stored);
  if (bodies.spans.length) await options.insert('spans', bodies.spans);
  if (bodies.logs.length) await options.insert('logs', bodies.logs);
  return bodies.rows;
}

/** The head batch is in ClickHouse: its frames leave the spool, and the flushes they end resolve. */
function landed(s: ShipperState, head: Batch): void {
  s.pipeline.shift();
  s.spool.ack(head.count);
  s.claimed -= head.count;
  for (const k of head.keys) s.inFlight.delete(k);
  s.backoffMs = 0;
  s.options.onShipped?.(head.rows);
  settleFlushes(s);
}

/**
 * A batch failed: once every batch in flight has settled, their frames are marked suspect and
 * unclaimed, the flushes waiting fail, and the next try waits out the back-off.
 */
async function failAll(s: ShipperState, error: Error): Promise<void> {
  await Promise.allSettled(s.pipeline.map((j) => j.done));
  s.suspectUntil = Math.max(s.suspectUntil, s.spool.entries[s.claimed - 1]?.seq ?? -1);
  s.pipeline.length = 0;
  s.claimed = 0;
  s.inFlight.clear();
  s.options.onFailure?.(error);
  s.options.logger.warn('spool: a batch to ClickHouse failed; retrying', { error: error.message });
  settleFlushes(s, error);
  s.backoffMs = Math.min(10_000, s.backoffMs ? s.backoffMs * 2 : s.retryMs);
}

/** Resolves the flushes whose frames all left the spool; rejects all with `error`. */
function settleFlushes(s: ShipperState, error?: Error): void {
  const shipped = s.spool.entries[0]?.seq ?? Infinity;
  const left: Flush[] = [];
  for (const f of s.flushes) {
    if (error) f.reject(error);
    else if (f.seq < shipped) f.resolve();
    else left.push(f);
  }
  s.flushes = left;
}

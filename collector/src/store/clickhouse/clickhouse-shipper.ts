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

/** Starts shipping; `flush()` ships what waits now and resolves once it is in ClickHouse. */
export function startShipper(options: ShipperOptions) {
  const { spool, logger } = options;
  const flushRows = options.flushRows ?? 20_000;
  const maxRows = options.maxRows ?? 50_000;
  const maxDelayMs = options.maxDelayMs ?? 1000;
  const retryMs = options.retryMs ?? 250;
  const parallel = options.parallel ?? 2;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let backoffMs = 0;
  let closed = false;
  /** Flushes waiting for the frames up to a seq. */
  let flushes: { seq: number; resolve: () => void; reject: (e: Error) => void }[] = [];

  /** Head entries claimed by the batches in flight, and those batches in spool order. */
  let claimed = 0;
  const pipeline: { count: number; rows: number; keys: string[]; done: Promise<void> }[] = [];
  /** The span keys of the batches in flight: a later batch leaves them out as if stored. */
  const inFlight = new Set<string>();
  /**
   * Frames up to this seq may be half written in ClickHouse (in flight when a batch failed, or left
   * by the last run): their batches take the thorough lookup.
   */
  let suspectUntil = spool.entries.at(-1)?.seq ?? -1;

  const pendingRows = (from = 0): number => {
    let n = 0;
    for (let i = from; i < spool.entries.length; i++) n += spool.entries[i]!.rows;
    return n;
  };
  /** How long until the oldest frame not in flight is due (0: now). */
  const dueInMs = (): number =>
    flushes.length || pendingRows(claimed) >= flushRows
      ? 0
      : Math.max(0, maxDelayMs - (performance.now() - (spool.entries[claimed]?.atMs ?? 0)));

  /** Sends one batch's rows: the spans ClickHouse or an earlier batch in flight holds left out. */
  async function ship(frames: SpoolFrame[], earlier: Set<string>, thorough: boolean): Promise<number> {
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

  /** Claims the next frames (up to maxRows) and starts sending them. */
  function startBatch(): void {
    let count = 0;
    for (let rows = 0; claimed + count < spool.entries.length; count++) {
      const e = spool.entries[claimed + count]!;
      if (count && rows + e.rows > maxRows) break;
      rows += e.rows;
    }
    const thorough = spool.entries[claimed]!.seq <= suspectUntil;
    const frames = spool.entries.slice(claimed, claimed + count).map((e) => decodeFrame(spool.read(e)));
    const keys = frames.flatMap((f) => f.spans.keys);
    const earlier = new Set(inFlight);
    for (const k of keys) inFlight.add(k);
    claimed += count;
    const job = { count, rows: 0, keys, done: Promise.resolve() };
    job.done = ship(frames, earlier, thorough).then((rows) => {
      job.rows = rows;
    });
    // Awaited in order by drain(); a later batch failing first is not an unhandled rejection.
    job.done.catch(() => undefined);
    pipeline.push(job);
  }

  /** Resolves the flushes whose frames all left the spool; rejects all with `error`. */
  function settleFlushes(error?: Error): void {
    const shipped = spool.entries[0]?.seq ?? Infinity;
    const left: typeof flushes = [];
    for (const f of flushes) {
      if (error) f.reject(error);
      else if (f.seq < shipped) f.resolve();
      else left.push(f);
    }
    flushes = left;
  }

  /**
   * Keeps up to `parallel` batches in flight while frames are due (a batch's INSERTs overlap the
   * next one's lookup and encoding), and drops each from the spool in order once ClickHouse has it.
   * A failure fails every batch in flight: they are sent again after the back-off (their spans are
   * found stored and left out).
   */
  async function drain(): Promise<void> {
    for (;;) {
      while (!closed && pipeline.length < parallel && claimed < spool.entries.length && dueInMs() === 0)
        startBatch();
      const head = pipeline[0];
      if (!head) return;
      try {
        await head.done;
      } catch (error) {
        await Promise.allSettled(pipeline.map((j) => j.done));
        suspectUntil = Math.max(suspectUntil, spool.entries[claimed - 1]?.seq ?? -1);
        pipeline.length = 0;
        claimed = 0;
        inFlight.clear();
        options.onFailure?.(error as Error);
        logger.warn('spool: a batch to ClickHouse failed; retrying', { error: (error as Error).message });
        settleFlushes(error as Error);
        backoffMs = Math.min(10_000, backoffMs ? backoffMs * 2 : retryMs);
        return;
      }
      pipeline.shift();
      spool.ack(head.count);
      claimed -= head.count;
      for (const k of head.keys) inFlight.delete(k);
      backoffMs = 0;
      options.onShipped?.(head.rows);
      settleFlushes();
    }
  }

  /** Runs a drain now, or sets the timer for when the oldest frame falls due (or the back-off ends). */
  function schedule(): void {
    clearTimeout(timer);
    if (running || closed || !spool.entries.length) return;
    const waitMs = backoffMs || dueInMs();
    if (waitMs > 0) {
      timer = setTimeout(() => {
        backoffMs = 0;
        schedule();
      }, waitMs);
      timer.unref();
      return;
    }
    running = drain().finally(() => {
      running = undefined;
      schedule();
    });
  }

  if (spool.entries.length)
    logger.info('spool: shipping what the last run left first', { batches: spool.entries.length });
  schedule();

  return {
    /** A frame was appended: ships once enough rows wait or the oldest is due. */
    appended(): void {
      if (!backoffMs) schedule();
    },
    /** Ships what is spooled now; resolves once it is in ClickHouse (rejects with its failure). */
    flush(): Promise<void> {
      const last = spool.entries.at(-1);
      if (!last) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        flushes.push({ seq: last.seq, resolve, reject });
        backoffMs = 0;
        schedule();
      });
    },
    /** ClickHouse answers again: retry now rather than at the end of the back-off. */
    retryNow(): void {
      if (!backoffMs) return;
      backoffMs = 0;
      schedule();
    },
    get pendingRows(): number {
      return pendingRows();
    },
    /** Ships what is spooled (for up to `timeoutMs`), then stops; what is left stays spooled. */
    async close(timeoutMs = 5000): Promise<void> {
      const until = performance.now() + timeoutMs;
      let failed = false;
      while (spool.entries.length && performance.now() < until && !failed)
        await this.flush().catch(() => (failed = true));
      closed = true;
      clearTimeout(timer);
      await running;
    },
  };
}

export type Shipper = ReturnType<typeof startShipper>;

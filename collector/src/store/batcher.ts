// Requests that share one write: while a batch is being written, what arrives goes together in the
// next, so a store makes a few round trips per batch instead of one per request (the ClickHouse
// store's spans and its metric points). One batch at a time: each sees what the one before wrote.

export interface BatcherOptions<I> {
  /** How long a batch waits for more after its first item, when nothing is being written (0: not at all). */
  lingerMs?: number;
  /** A waiting batch starts once its items add up to this much (`sizeOf`), linger or not. */
  flushSize?: number;
  sizeOf?: (item: I) => number;
}

/**
 * `run` writes a batch and answers each of its items (in order); a batch it fails fails each of its
 * items with that error.
 */
export function createBatcher<I, O>(run: (items: I[]) => Promise<O[]>, options: BatcherOptions<I> = {}) {
  const lingerMs = options.lingerMs ?? 0;
  const flushSize = options.flushSize ?? Infinity;
  const sizeOf = options.sizeOf ?? (() => 1);
  let waiting: { item: I; resolve: (out: O) => void; reject: (error: unknown) => void }[] = [];
  let waitingSize = 0;
  let running: Promise<void> | undefined;
  let lingering: NodeJS.Timeout | undefined;

  async function drain(): Promise<void> {
    while (waiting.length) {
      const batch = waiting;
      waiting = [];
      waitingSize = 0;
      try {
        const out = await run(batch.map((w) => w.item));
        batch.forEach((w, i) => w.resolve(out[i]!));
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
  }

  function start(): void {
    clearTimeout(lingering);
    lingering = undefined;
    running ??= drain().finally(() => {
      running = undefined;
      // An item added between the drain's last look at `waiting` and here (a caller resumed by the
      // last batch adding again at once) saw the drain still running and left itself to it.
      if (waiting.length && !lingering) start();
    });
  }

  return {
    add(item: I): Promise<O> {
      return new Promise<O>((resolve, reject) => {
        waiting.push({ item, resolve, reject });
        waitingSize += sizeOf(item);
        // A running batch takes whatever waits when it returns; otherwise wait a moment for more,
        // unless enough is here already.
        if (running || lingering) {
          if (lingering && waitingSize >= flushSize) start();
          return;
        }
        if (lingerMs > 0 && waitingSize < flushSize) lingering = setTimeout(start, lingerMs);
        else start();
      });
    },
    /** Starts what lingers; resolves once nothing is being written. */
    async flush(): Promise<void> {
      if (lingering) start();
      await running;
    },
  };
}

// `agentrt sessions <id>` and `agentrt traces show <id>` right after an invocation: exporters send
// spans in batches (every few seconds), so the id the user just saw may not be in the collector yet.
// While the collector is up, wait a little for it, say so once, and say why when giving up.
import { type CliIO, UsageError } from './command.js';
import { CollectorRequestError, collectorJson } from './collector-client.js';

/** Default wait for an unknown id: two batch intervals of the OTel SDK (5 s each) and some slack. */
export const DEFAULT_WAIT_SECONDS = 15;

interface Health {
  received?: { spans?: number };
  pendingRecords?: number;
}

async function receivedSpans(base: string): Promise<number | undefined> {
  try {
    const health = await collectorJson<Health>(base, '/healthz', { signal: AbortSignal.timeout(5_000) });
    return (health.received?.spans ?? 0) + (health.pendingRecords ?? 0);
  } catch {
    return undefined;
  }
}

/** `--wait <seconds>` as given, or the default; a usage mistake names the flag. */
export function parseWaitSeconds(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_WAIT_SECONDS;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value < 0)
    throw new UsageError(`--wait must be a number of seconds (0 = do not wait), got '${raw}'`);
  return value;
}

/**
 * Fetches `path` from the collector; while it answers 404 and the collector is up, polls for up to
 * `waitSeconds`, printing "waiting for spans…" once on stderr. Gives up with an error that says what
 * the collector received meanwhile.
 */
export async function fetchWhenArrived<T>(
  base: string,
  path: string,
  what: string,
  waitSeconds: number,
  io: CliIO,
  pollMs = 500,
): Promise<T> {
  const deadline = Date.now() + waitSeconds * 1000;
  let before: number | undefined;
  let announced = false;
  for (;;) {
    try {
      return await collectorJson<T>(base, path);
    } catch (error) {
      if (!(error instanceof CollectorRequestError) || error.status !== 404) throw error;
      const now = await receivedSpans(base);
      if (now === undefined) throw error;
      before ??= now;
      if (Date.now() >= deadline) {
        const meanwhile = now - before;
        const why =
          waitSeconds === 0
            ? 'not waiting (--wait 0)'
            : meanwhile > 0
              ? `the collector received ${meanwhile} span(s) in the last ${waitSeconds} s, none for it`
              : `the collector received no spans at all in the last ${waitSeconds} s`;
        throw new Error(
          `no ${what} in the collector at ${base} (${error.message}): ${why}. Check the id; is the agent exporting to ` +
            `this collector (OTEL_EXPORTER_OTLP_ENDPOINT)? Pass --wait <seconds> to wait longer.`,
          { cause: error },
        );
      }
      if (!announced) {
        io.stderr(
          `waiting for spans… (${what} is not in the collector yet; exporters send every few seconds)\n`,
        );
        announced = true;
      }
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(pollMs, Math.max(0, deadline - Date.now()))),
      );
    }
  }
}

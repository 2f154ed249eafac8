// Talking to a running collector from the CLI: base URL resolution, JSON requests with clear
// errors, and the small text renderers (tables, durations) the trace/session commands share.
import type { CliIO } from './command.js';

export const DEFAULT_COLLECTOR_URL = 'http://127.0.0.1:4318';

/** --url, then $AGENTRT_COLLECTOR_URL, then the default local collector. */
export function collectorUrl(url: string | undefined, io: CliIO): string {
  return (url || io.env.AGENTRT_COLLECTOR_URL?.trim() || DEFAULT_COLLECTOR_URL).replace(/\/+$/, '');
}

/** An error answer from the collector, with its parsed body. */
export class CollectorRequestError extends Error {
  override name = 'CollectorRequestError';
  constructor(
    message: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    super(message);
  }
}

/** Fetches from the collector; network failures and non-2xx answers become readable errors. */
export async function collectorFetch(base: string, path: string, init: RequestInit = {}): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, { ...init, signal: init.signal ?? AbortSignal.timeout(60_000) });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new Error(
      `cannot reach the collector at ${base} (${cause}); start one with \`agentrt collector\` or pass --url`,
      {
        cause: error,
      },
    );
  }
  if (!res.ok) {
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON: keep the text as the message.
    }
    const message = (body as { message?: string })?.message ?? (text || res.statusText);
    throw new CollectorRequestError(`collector answered ${res.status}: ${message}`, res.status, body);
  }
  return res;
}

export async function collectorJson<T>(base: string, path: string, init: RequestInit = {}): Promise<T> {
  return (await (await collectorFetch(base, path, init)).json()) as T;
}

const UNITS_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** Parses `90s`, `5m`, `1h`, `2d` into milliseconds; throws on anything else. */
export function parseDurationMs(text: string, name: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$/.exec(text.trim());
  if (!m) throw new Error(`${name} must be a duration like 30s, 15m, 1h or 7d (got '${text}')`);
  return Number(m[1]) * UNITS_MS[m[2]!]!;
}

/** Epoch ms from an ISO date or a number of epoch ms. */
export function parseTimeMs(text: string, name: string): number {
  const n = Number(text);
  if (Number.isFinite(n)) return n;
  const t = Date.parse(text);
  if (Number.isNaN(t)) throw new Error(`${name} must be an ISO date or epoch milliseconds (got '${text}')`);
  return t;
}

export function formatDurationNano(ns: number): string {
  if (ns >= 60e9) return `${(ns / 60e9).toFixed(1)}m`;
  if (ns >= 1e9) return `${(ns / 1e9).toFixed(2)}s`;
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(1)}ms`;
  return `${(ns / 1e3).toFixed(0)}µs`;
}

export function formatTime(epochMs: number): string {
  return new Date(epochMs).toISOString().replace('T', ' ').replace('Z', '');
}

function cell(v: unknown, max: number): string {
  const s = v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
  const flat = s.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A plain-text table with a header row; long cells are cut at `maxCell` characters. */
export function renderTable(columns: string[], rows: unknown[][], maxCell = 60): string {
  if (!rows.length) return '(no rows)\n';
  const cells = rows.map((r) => r.map((v) => cell(v, maxCell)));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (r: string[]): string =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return `${[line(columns), line(widths.map((w) => '─'.repeat(w))), ...cells.map(line)].join('\n')}\n`;
}

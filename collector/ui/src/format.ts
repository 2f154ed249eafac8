/** Number, duration and time formatting for the UI. */

/** 0.42 ms → "420 µs", 12.3 → "12.3 ms", 1534 → "1.53 s", 125000 → "2m 5s". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '–';
  if (ms === 0) return '0 ms';
  if (ms < 1) return `${Math.round(ms * 1000)} µs`;
  if (ms < 10) return `${trim(ms.toFixed(2))} ms`;
  if (ms < 1000) return `${trim(ms.toFixed(1))} ms`;
  if (ms < 60_000) return `${trim((ms / 1000).toFixed(2))} s`;
  const totalS = Math.round(ms / 1000);
  const h = Math.floor(totalS / 3600);
  const m = Math.floor((totalS % 3600) / 60);
  const s = totalS % 60;
  return h > 0 ? `${h}h ${m}m` : `${m}m ${s}s`;
}

function trim(s: string): string {
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}

/** 950 → "950", 12_345 → "12.3k", 4_200_000 → "4.2M". */
export function formatCount(n: number): string {
  if (!Number.isFinite(n)) return '–';
  const abs = Math.abs(n);
  if (abs < 1000) return String(Math.round(n * 100) / 100);
  if (abs < 1e6) return `${trim((n / 1e3).toFixed(1))}k`;
  if (abs < 1e9) return `${trim((n / 1e6).toFixed(1))}M`;
  return `${trim((n / 1e9).toFixed(1))}B`;
}

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

/** Local wall-clock time with milliseconds: "14:03:27.120". */
export function formatClock(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** Local date and time: "2026-11-21 14:03:27". */
export function formatDateTime(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** Local date and time with milliseconds: "2026-11-21 14:03:27.120". */
export function formatTimestamp(ms: number): string {
  return `${formatDateTime(ms)}.${pad(new Date(ms).getMilliseconds(), 3)}`;
}

/** "just now", "5 s ago", "3 min ago", "2 h ago", else the date. */
export function formatAgo(ms: number, nowMs: number = Date.now()): string {
  const d = nowMs - ms;
  if (d < 2000) return 'just now';
  if (d < 60_000) return `${Math.floor(d / 1000)} s ago`;
  if (d < 3_600_000) return `${Math.floor(d / 60_000)} min ago`;
  if (d < 86_400_000) return `${Math.floor(d / 3_600_000)} h ago`;
  return formatDateTime(ms);
}

/** First characters of a trace or span id, for compact display. */
export function shortId(id: string, n = 8): string {
  return id.length > n ? id.slice(0, n) : id;
}

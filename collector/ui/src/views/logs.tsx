/** Logs: the collector's log records with filters, severity colours and a live tail. */
import { useEffect, useState } from 'preact/hooks';
import { type LogRowView, listLogs } from '../api.js';
import { EmptyState, ErrorBox } from '../components/common.js';
import { formatTimestamp, shortId } from '../format.js';
import { mergeNewestFirst } from '../log-rows.js';
import { routeHref } from '../router.js';

export interface LogFilters {
  sessionId?: string;
  traceId?: string;
  service?: string;
  severity?: string;
  q?: string;
}

const MAX_ROWS = 2000;

export function severityClass(n: number): string {
  if (n >= 17) return 'sev-error';
  if (n >= 13) return 'sev-warn';
  if (n >= 9) return 'sev-info';
  return 'sev-debug';
}

export function LogsView({ initial = {} }: { initial?: LogFilters }) {
  const [filters, setFilters] = useState<LogFilters>(initial);
  const [rows, setRows] = useState<LogRowView[]>([]);
  const [error, setError] = useState<Error | undefined>();
  const [tail, setTail] = useState(true);
  const key = JSON.stringify(filters);
  // The filters live in the address too (a shareable link), without a navigation that remounts.
  useEffect(() => history.replaceState(null, '', routeHref({ view: 'logs', ...filters })), [key]);
  useEffect(() => {
    let cursor: number | undefined;
    let stopped = false;
    // New filters: what is shown no longer matches them.
    setRows([]);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async (): Promise<void> => {
      try {
        const r = await listLogs(filters, cursor);
        if (stopped) return;
        setError(undefined);
        // Newest first by the records' own time; the tail's new records join in their place.
        setRows((prev) => mergeNewestFirst(cursor === undefined ? [] : prev, r.logs, MAX_ROWS));
        cursor = r.cursor;
      } catch (e) {
        if (!stopped) setError(e as Error);
      }
      if (!stopped && tail) timer = setTimeout(() => void poll(), 1000);
    };
    void poll();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [key, tail]);
  const field = (name: keyof LogFilters, placeholder: string) => (
    <input
      type="search"
      name={name}
      placeholder={placeholder}
      value={filters[name] ?? ''}
      onChange={(e) => setFilters({ ...filters, [name]: (e.target as HTMLInputElement).value || undefined })}
    />
  );
  return (
    <section>
      <h1>
        Logs <span class="count">{rows.length}</span>
      </h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        {field('q', 'text in the body')}
        {field('service', 'service')}
        {field('sessionId', 'session id')}
        {field('traceId', 'trace id')}
        <select
          name="severity"
          value={filters.severity ?? ''}
          onChange={(e) =>
            setFilters({ ...filters, severity: (e.target as HTMLSelectElement).value || undefined })
          }
        >
          <option value="">any severity</option>
          <option value="info">info and above</option>
          <option value="warn">warn and above</option>
          <option value="error">error and above</option>
        </select>
        <label>
          <input type="checkbox" checked={tail} data-testid="live-tail" onChange={() => setTail(!tail)} />{' '}
          live tail
        </label>
      </form>
      {error && <ErrorBox error={error} />}
      {rows.length === 0 && !error ? (
        <EmptyState title="No log records match" />
      ) : (
        <table class="list logs" data-testid="logs-table">
          <thead>
            <tr>
              <th>time</th>
              <th>level</th>
              <th>service</th>
              <th>session</th>
              <th>trace</th>
              <th>message</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.cursor} class={severityClass(r.severityNumber)} data-testid="log-row">
                <td class="nowrap">{formatTimestamp(r.timeMs)}</td>
                <td class="sev">{r.severityText}</td>
                <td>{r.service}</td>
                <td>
                  {r.sessionId && (
                    <a href={routeHref({ view: 'session', sessionId: r.sessionId })} title={r.sessionId}>
                      {shortId(r.sessionId, 12)}
                    </a>
                  )}
                </td>
                <td>
                  {r.traceId && (
                    <a
                      href={routeHref({
                        view: 'trace',
                        traceId: r.traceId,
                        ...(r.spanId ? { spanId: r.spanId } : {}),
                      })}
                      title={r.traceId}
                    >
                      {shortId(r.traceId)}
                    </a>
                  )}
                </td>
                <td class="log-body">{r.body}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

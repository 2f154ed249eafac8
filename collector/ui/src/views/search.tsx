/** Transaction search: query box with key completion, precise errors, span and stats results. */
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import {
  ApiError,
  isQueryError,
  listKeys,
  runQuery,
  type QueryErrorBody,
  type QueryResponse,
} from '../api.js';
import { binTimeMs } from '../chart-model.js';
import { applyCompletion, completionContext, insideString, suggest } from '../autocomplete.js';
import { StatsChart } from '../components/chart.js';
import { ErrorBox, JsonView } from '../components/common.js';
import { formatCount, formatDuration, formatTimestamp } from '../format.js';
import { navigate, useAsync } from '../hooks.js';
import { routeHref } from '../router.js';
import type { AttributeValue } from '../view-types.js';
import { columnUnit } from '../../../src/query/column-units.js';

const EXAMPLES = [
  {
    label: 'Model calls by model',
    query:
      'filter attributes.gen_ai.operation.name = "chat"\n| stats count(*), avg(durationNano), sum(attributes.gen_ai.usage.output_tokens) by attributes.gen_ai.request.model',
  },
  { label: 'Spans per minute', query: 'stats count(*) by bin(1m)' },
  {
    label: 'Slowest tool calls',
    query:
      'filter attributes.gen_ai.operation.name = "execute_tool"\n| fields name, attributes.gen_ai.tool.name, durationNano, traceId\n| sort durationNano desc\n| limit 20',
  },
  {
    label: 'Errors',
    query: 'filter status.code = "ERROR"\n| fields name, status.message, traceId\n| limit 50',
  },
  {
    label: 'p95 latency by service',
    query: 'stats pct(durationNano, 95), count(*) by resource.attributes.service.name',
  },
];

const RANGES: { label: string; ms?: number }[] = [
  { label: 'last 15 minutes', ms: 15 * 60_000 },
  { label: 'last hour', ms: 3_600_000 },
  { label: 'last 24 hours', ms: 86_400_000 },
  { label: 'last 7 days', ms: 7 * 86_400_000 },
  { label: 'all time' },
];

type Outcome =
  | { kind: 'result'; result: QueryResponse }
  | { kind: 'query-error'; error: QueryErrorBody; query: string }
  | { kind: 'error'; error: Error };

export function SearchView({ query }: { query?: string }) {
  const [text, setText] = useState(query ?? '');
  const [rangeIndex, setRangeIndex] = useState(RANGES.length - 1);
  const [outcome, setOutcome] = useState<Outcome | undefined>();
  const [running, setRunning] = useState(false);
  const keys = useAsync(listKeys, []);
  const run = async (q: string): Promise<void> => {
    if (!q.trim()) return;
    setRunning(true);
    const ms = RANGES[rangeIndex]?.ms;
    const now = Date.now();
    try {
      setOutcome({
        kind: 'result',
        result: await runQuery(q, ms ? now - ms : undefined, ms ? now : undefined),
      });
    } catch (err) {
      if (err instanceof ApiError && isQueryError(err.body))
        setOutcome({ kind: 'query-error', error: err.body, query: q });
      else setOutcome({ kind: 'error', error: err instanceof Error ? err : new Error(String(err)) });
    } finally {
      setRunning(false);
    }
  };
  useEffect(() => {
    if (query === undefined) return;
    setText(query);
    void run(query);
    // Re-run when the route's query or the time range changes.
  }, [query, rangeIndex]);
  const submit = (q: string): void => {
    if (q === query) void run(q);
    else navigate(routeHref({ view: 'search', query: q }));
  };

  return (
    <section class="search">
      <h1>Transaction search</h1>
      <div class="query-row">
        <QueryEditor
          value={text}
          onChange={setText}
          onRun={submit}
          keys={keys.data ?? []}
          onFocus={keys.reload}
        />
        <div class="query-actions">
          <button class="btn primary" disabled={running} onClick={() => submit(text)} data-testid="run-query">
            {running ? 'Running…' : 'Run query'}
          </button>
          <select
            value={String(rangeIndex)}
            onChange={(e) => setRangeIndex(Number((e.target as HTMLSelectElement).value))}
            aria-label="time range"
          >
            {RANGES.map((r, i) => (
              <option key={r.label} value={i}>
                {r.label}
              </option>
            ))}
          </select>
        </div>
      </div>
      <p class="muted small">
        <kbd>Enter</kbd> runs · <kbd>Shift</kbd>+<kbd>Enter</kbd> new line · <kbd>Tab</kbd> completes a key ·{' '}
        <kbd>Esc</kbd> closes suggestions
      </p>
      {!outcome && (
        <div class="examples">
          <p class="muted">
            Spans are structured records: filter on <code>attributes.*</code>,{' '}
            <code>resource.attributes.*</code>, <code>name</code>, <code>durationNano</code>,{' '}
            <code>status.code</code>… then <code>fields</code>, <code>stats</code>, <code>sort</code>,{' '}
            <code>limit</code>, joined with <code>|</code>. Try one:
          </p>
          <ul>
            {EXAMPLES.map((ex) => (
              <li key={ex.label}>
                <a href={routeHref({ view: 'search', query: ex.query })}>{ex.label}</a>{' '}
                <code class="muted">{ex.query.split('\n')[0]}</code>
              </li>
            ))}
          </ul>
        </div>
      )}
      {outcome?.kind === 'query-error' && <QueryErrorView error={outcome.error} query={outcome.query} />}
      {outcome?.kind === 'error' && <ErrorBox error={outcome.error} />}
      {outcome?.kind === 'result' && <Results result={outcome.result} />}
    </section>
  );
}

function QueryEditor({
  value,
  onChange,
  onRun,
  keys,
  onFocus,
}: {
  value: string;
  onChange: (v: string) => void;
  onRun: (v: string) => void;
  keys: string[];
  /** The box got focus: the keys are read again (spans that arrived since bring new ones). */
  onFocus: () => void;
}) {
  const ref = useRef<HTMLTextAreaElement>(null);
  const [cursor, setCursor] = useState(0);
  const [active, setActive] = useState(0);
  const [dismissed, setDismissed] = useState(false);
  /** Closes the suggestions a moment after the box loses focus (a click on one lands first). */
  const closing = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const ctx = completionContext(value, cursor);
  const suggestions = dismissed || insideString(value, cursor) ? [] : suggest(keys, ctx.prefix, 10);
  /**
   * Where the caret goes once the accepted text is rendered: placed in that render's commit, before
   * the next event. (Placed a frame later, it collapsed a selection made meanwhile: a select-all
   * and typing right after Tab appended the new text instead of replacing the old.)
   */
  const caret = useRef<{ text: string; cursor: number } | undefined>(undefined);
  useLayoutEffect(() => {
    const box = ref.current;
    if (!caret.current || !box || box.value !== caret.current.text) return;
    const at = caret.current.cursor;
    caret.current = undefined;
    box.focus();
    box.setSelectionRange(at, at);
  });
  const accept = (s: string): void => {
    const next = applyCompletion(value, ctx, s);
    caret.current = next;
    onChange(next.text);
    setCursor(next.cursor);
  };
  const onKeyDown = (e: KeyboardEvent): void => {
    if (suggestions.length > 0) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        setActive((a) => (a + (e.key === 'ArrowDown' ? 1 : suggestions.length - 1)) % suggestions.length);
        return;
      }
      if (e.key === 'Tab' || (e.key === 'Enter' && !e.shiftKey && !e.ctrlKey && !e.metaKey)) {
        e.preventDefault();
        accept(suggestions[Math.min(active, suggestions.length - 1)]!);
        return;
      }
      if (e.key === 'Escape') {
        setDismissed(true);
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      onRun(value);
    }
  };
  return (
    <div class="query-editor">
      <textarea
        ref={ref}
        class="query-input"
        aria-label="query"
        spellcheck={false}
        rows={Math.min(8, Math.max(2, value.split('\n').length))}
        placeholder='filter attributes.session.id = "…" and durationNano > 1e9 | stats count(*) by name'
        value={value}
        onInput={(e) => {
          const t = e.currentTarget;
          onChange(t.value);
          setCursor(t.selectionStart);
          setActive(0);
          setDismissed(false);
        }}
        onKeyDown={onKeyDown}
        onKeyUp={(e) => {
          if (!['ArrowDown', 'ArrowUp', 'Enter', 'Tab'].includes(e.key))
            setCursor(e.currentTarget.selectionStart);
        }}
        onClick={(e) => setCursor(e.currentTarget.selectionStart)}
        onBlur={() => {
          closing.current = setTimeout(() => setDismissed(true), 150);
        }}
        onFocus={() => {
          // Focus back within the moment: the pending close would hide the suggestions of the
          // typing that follows.
          clearTimeout(closing.current);
          setDismissed(false);
          onFocus();
        }}
      />
      {suggestions.length > 0 && (
        <ul class="completions" role="listbox" data-testid="completions">
          {suggestions.map((s, i) => (
            <li
              key={s}
              role="option"
              aria-selected={i === active}
              class={i === active ? 'active' : ''}
              onMouseDown={(e) => {
                e.preventDefault();
                accept(s);
              }}
            >
              {s}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** The query with a caret under the failing position, the message and what was expected. */
function QueryErrorView({ error, query }: { error: QueryErrorBody; query: string }) {
  const lines = query.split('\n');
  const lineIndex = Math.min(Math.max(error.line - 1, 0), lines.length - 1);
  const column = Math.max(error.column - 1, 0);
  const line = lines[lineIndex] ?? '';
  return (
    <div class="query-error" role="alert" data-testid="query-error">
      <div class="query-error-title">
        {error.error === 'QuerySyntaxError' ? 'Syntax error' : 'Query error'} at line {error.line}, column{' '}
        {error.column}
      </div>
      <pre class="query-error-src">
        {line.slice(0, column)}
        <mark>{line.slice(column, column + 1) || ' '}</mark>
        {line.slice(column + 1)}
        {'\n'}
        <span class="caret-line">{' '.repeat(column)}^</span>
      </pre>
      <div>{error.message}</div>
      {error.expected && error.expected.length > 0 && (
        <div class="muted">expected: {error.expected.join(', ')}</div>
      )}
    </div>
  );
}

function cell(v: AttributeValue | undefined, column = ''): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'number' && columnUnit(column) === 'durationNano') return formatDuration(v / 1e6);
  if (typeof v === 'object') return JSON.stringify(v);
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toFixed(3).replace(/\.?0+$/, '');
  return String(v);
}

const MAX_CELL_CHARS = 160;

function Cell({
  value,
  column,
  time,
}: {
  value: AttributeValue | undefined;
  column: string;
  time?: boolean;
}) {
  // The whole record (`@message`) or any nested value: expandable JSON instead of a wall of text.
  if (typeof value === 'object' && value !== null) {
    return (
      <details class="cell-json">
        <summary>
          {Array.isArray(value) ? `[${value.length}]` : column === '@message' ? 'record' : '{…}'}
        </summary>
        <JsonView value={value} />
      </details>
    );
  }
  const at = time || columnUnit(column) === 'epochMs' ? binTimeMs(value) : undefined;
  const text = at !== undefined ? formatTimestamp(at) : cell(value, column);
  const long = text.length > MAX_CELL_CHARS;
  // Shown in human units; the raw value (ns, epoch ms) in the tooltip.
  const raw = value !== undefined && value !== null && String(value) !== text ? String(value) : undefined;
  return (
    <span class={text.length > 48 ? 'cell wrap' : 'cell'} title={long ? text : raw}>
      {long ? text.slice(0, MAX_CELL_CHARS) + '…' : text}
    </span>
  );
}

function Results({ result }: { result: QueryResponse }) {
  const traceColumn = result.columns.find((c) => c === 'traceId');
  // Projected span rows may leave traceId out of the columns yet still carry it: link anyway.
  const extraLink = !traceColumn && result.rows.some((r) => typeof r.traceId === 'string');
  return (
    <div class="results">
      <p class="muted" data-testid="query-meta">
        {result.rows.length} {result.kind === 'stats' ? 'group' : 'span'}
        {result.rows.length === 1 ? '' : 's'} · scanned {formatCount(result.scanned)} records in{' '}
        {result.elapsedMs.toFixed(1)} ms
      </p>
      {result.kind === 'stats' && <StatsChart result={result} />}
      {result.rows.length === 0 ? (
        <div class="state">No records match.</div>
      ) : (
        <div class="table-scroll">
          <table class="list results-table" data-testid="results-table">
            <thead>
              <tr>
                {extraLink && <th>trace</th>}
                {result.columns.map((c) => (
                  <th
                    key={c}
                    class={typeof result.rows[0]?.[c] === 'number' && c !== result.timeColumn ? 'num' : ''}
                  >
                    {c}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {result.rows.map((row, i) => {
                const traceId = typeof row.traceId === 'string' ? row.traceId : undefined;
                const spanId = typeof row.spanId === 'string' ? row.spanId : undefined;
                return (
                  <tr key={i}>
                    {extraLink && (
                      <td>
                        {traceId && (
                          <a href={routeHref({ view: 'trace', traceId, spanId })} class="mono">
                            {traceId.slice(0, 8)}
                          </a>
                        )}
                      </td>
                    )}
                    {result.columns.map((c) => (
                      <td key={c} class={typeof row[c] === 'number' ? 'num' : ''}>
                        {c === traceColumn && traceId ? (
                          <a href={routeHref({ view: 'trace', traceId, spanId })} class="mono">
                            {traceId}
                          </a>
                        ) : (
                          <Cell value={row[c]} column={c} time={c === result.timeColumn} />
                        )}
                      </td>
                    ))}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

import { readFile, writeFile } from 'node:fs/promises';
import {
  type ColumnUnit,
  type QueryErrorBody,
  type QueryResponse,
  type SpanNode,
  type TraceListResponse,
  type TraceResponse,
  columnUnit,
} from '@agentrt/collector';
import { type CliIO, type Command, UsageError, parseCommandArgs } from '../command.js';
import { DEFAULT_WAIT_SECONDS, fetchWhenArrived, parseWaitSeconds } from '../wait-for-spans.js';
import {
  CollectorRequestError,
  collectorFetch,
  collectorJson,
  collectorUrl,
  formatDurationNano,
  formatTime,
  parseDurationMs,
  parseTimeMs,
  renderTable,
} from '../collector-client.js';

const usage = `Usage: agentrt traces <query|show|list|export|import> …

  agentrt traces query '<query>' [--since 1h] [--start <t>] [--end <t>] [--json]
      Runs a transaction-search query, e.g.
        filter attributes.session.id = "abc" | sort @timestamp asc
        filter durationNano > 1e9 and name like /chat/ | fields name, durationNano
        stats count(*), pct(durationNano, 95) by attributes.gen_ai.request.model, bin(5m)
        metric Latency p95 by Name every 1h since 1d      (a metric time series)
  agentrt traces show <traceId> [--wait <s>] [--json]   the trace as a waterfall in the terminal; an id
      the collector does not know yet is waited for (default ${DEFAULT_WAIT_SECONDS} s, 0 = no wait)
  agentrt traces list [--service s] [--status error|ok] [--min-duration-ms n] [--q text] [--all] [--limit n] [--json]
      --all also lists health probes, agentrt doctor checks and the stack's own traffic (hidden by default)
  agentrt traces export <file> [--trace <id>] [--since 1h]   OTLP/JSON lines (traces, then logs)
  agentrt traces import <file>                  store an OTLP/JSON lines file (agentcore dev's .otlp.jsonl)
      or one OTLP/JSON request, all or nothing: a bad line is named and nothing is stored

  --url <url>   the collector (default $AGENTRT_COLLECTOR_URL or http://127.0.0.1:4318)
  --json        machine-readable output`;

const options = {
  since: { type: 'string' },
  start: { type: 'string' },
  end: { type: 'string' },
  json: { type: 'boolean', default: false },
  url: { type: 'string' },
  trace: { type: 'string' },
  service: { type: 'string' },
  status: { type: 'string' },
  'min-duration-ms': { type: 'string' },
  q: { type: 'string' },
  limit: { type: 'string' },
  wait: { type: 'string' },
  all: { type: 'boolean', default: false },
} as const;

type Values = ReturnType<
  typeof parseCommandArgs<{ options: typeof options; allowPositionals: true }>
>['values'];

function timeRange(values: Values): { startMs?: number; endMs?: number } {
  const range: { startMs?: number; endMs?: number } = {};
  try {
    if (values.since) range.startMs = Date.now() - parseDurationMs(values.since, '--since');
    if (values.start) range.startMs = parseTimeMs(values.start, '--start');
    if (values.end) range.endMs = parseTimeMs(values.end, '--end');
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  return range;
}

/** The query with a caret under the position an error points at. */
function showQueryError(query: string, err: QueryErrorBody): string {
  const lines = query.split('\n');
  const line = lines[err.line - 1] ?? '';
  return `${err.error}: ${err.message} (line ${err.line}, column ${err.column})\n  ${line}\n  ${' '.repeat(Math.max(0, err.column - 1))}^\n`;
}

async function runQuery(base: string, query: string, values: Values, io: CliIO): Promise<number> {
  let res: QueryResponse;
  try {
    res = await collectorJson<QueryResponse>(base, '/api/query', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, ...timeRange(values) }),
    });
  } catch (error) {
    const body = error instanceof CollectorRequestError ? (error.body as QueryErrorBody) : undefined;
    if (body?.error === 'QuerySyntaxError' || body?.error === 'QueryError') {
      io.stderr(showQueryError(query, body));
      return 1;
    }
    throw error;
  }
  if (values.json) {
    io.stdout(`${JSON.stringify(res, null, 2)}\n`);
    return 0;
  }
  if (res.kind === 'spans' && res.columns.includes('@message')) {
    io.stdout(
      renderTable(
        ['time', 'service', 'name', 'duration', 'status', 'traceId', 'spanId'],
        res.rows.map((r) => [
          formatTime(r['@timestamp'] as number),
          r['resource.attributes.service.name'],
          r.name,
          formatDurationNano(r.durationNano as number),
          r['status.code'] === 'UNSET' ? '' : r['status.code'],
          r.traceId,
          r.spanId,
        ]),
      ),
    );
  } else {
    io.stdout(
      renderTable(
        res.columns,
        res.rows.map((r) =>
          res.columns.map((c) => humanCell(r[c], c === res.timeColumn ? 'epochMs' : columnUnit(c))),
        ),
      ),
    );
  }
  io.stderr(`${res.rows.length} rows, ${res.scanned} records scanned in ${res.elapsedMs} ms\n`);
  return 0;
}

/** A result cell in human units (`--json` keeps the raw values). */
function humanCell(value: unknown, unit: ColumnUnit | undefined): unknown {
  if (typeof value !== 'number') return value;
  if (unit === 'durationNano') return formatDurationNano(value);
  return unit === 'epochMs' ? formatTime(value) : value;
}

const BAR_WIDTH = 40;

/** The trace as indented names with timing bars on one shared time axis. */
export function renderWaterfall(trace: TraceResponse, width = BAR_WIDTH): string {
  const s = trace.summary;
  const t0 = s.startTimeUnixNano;
  const total = Math.max(1, s.durationNano);
  const rows: { label: string; bar: string; dur: string; mark: string }[] = [];
  const walk = (node: SpanNode, depth: number): void => {
    const span = node.span;
    const from = Math.min(width - 1, Math.round(((span.startTimeUnixNano - t0) / total) * width));
    const len = Math.max(1, Math.min(width - from, Math.round((span.durationNano / total) * width)));
    const bar = `${' '.repeat(from)}${'█'.repeat(len)}`.padEnd(width);
    const logs = node.logs.length ? ` (${node.logs.length} log${node.logs.length > 1 ? 's' : ''})` : '';
    rows.push({
      label: `${'  '.repeat(depth)}${span.name}${logs}`,
      bar,
      dur: formatDurationNano(span.durationNano),
      mark: span.status.code === 'ERROR' ? `✗ ${span.status.message ?? 'error'}` : '',
    });
    for (const child of node.children) walk(child, depth + 1);
  };
  for (const root of trace.roots) walk(root, 0);
  const labelWidth = Math.min(60, Math.max(...rows.map((r) => r.label.length), 4));
  const cut = (l: string): string =>
    l.length > labelWidth ? `${l.slice(0, labelWidth - 1)}…` : l.padEnd(labelWidth);
  const durWidth = Math.max(...rows.map((r) => r.dur.length));
  const head =
    `trace ${s.traceId}  ${s.agentName ?? s.serviceName}  ${formatTime(t0 / 1e6)}\n` +
    `${s.rootName}: ${formatDurationNano(s.durationNano)}, ${s.spanCount} spans, ${s.errorCount} errors` +
    `${s.tokens.total ? `, tokens in/out ${s.tokens.input}/${s.tokens.output}` : ''}` +
    `${s.sessionId ? `, session ${s.sessionId}` : ''}${s.inProgress ? ' (in progress: no root span yet)' : ''}\n\n`;
  return (
    head +
    rows.map((r) => `${cut(r.label)} │${r.bar}│ ${r.dur.padStart(durWidth)} ${r.mark}`.trimEnd()).join('\n') +
    '\n'
  );
}

/**
 * `traces import`: the file's OTLP/JSON lines (`agentcore dev`'s `.otlp.jsonl`, any OTLP/JSON
 * lines, or one OTLP/JSON document) to the collector's POST /v1/import, which stores all of it or
 * nothing and names the first bad line.
 */
async function importFile(base: string, file: string, io: CliIO): Promise<number> {
  let text = await readFile(file, 'utf8');
  try {
    // One (pretty-printed) document is one line.
    text = JSON.stringify(JSON.parse(text));
  } catch {
    // JSON lines: the collector reads them line by line.
  }
  const res = await collectorFetch(base, '/v1/import', {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson' },
    body: text,
  }).catch((error: unknown) => {
    throw error instanceof CollectorRequestError
      ? new Error(`${file}: nothing imported: ${error.message}`, { cause: error })
      : error;
  });
  const got = (await res.json()) as { lines: number; spans: number; logs: number; metricDataPoints: number };
  io.stdout(
    `imported ${file}: ${got.lines} line(s), ${got.spans} span(s), ${got.logs} log record(s), ${got.metricDataPoints} metric point(s)\n`,
  );
  return 0;
}

export const tracesCommand: Command = {
  name: 'traces',
  summary: 'query spans, show a trace as a waterfall, list, export and import traces',
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs({
      args: argv,
      options,
      allowPositionals: true,
      strict: true,
    });
    const [sub, arg, ...extra] = positionals;
    if (extra.length) throw new UsageError(`unexpected argument '${extra[0]}' (quote the query)`);
    const base = collectorUrl(values.url, io);
    switch (sub) {
      case 'query':
        if (!arg) throw new UsageError("missing '<query>'");
        return runQuery(base, arg, values, io);
      case 'show': {
        if (!arg) throw new UsageError('missing <traceId>');
        if (!/^[0-9a-fA-F]{32}$/.test(arg)) throw new UsageError('<traceId> must be 32 hex characters');
        const trace = await fetchWhenArrived<TraceResponse>(
          base,
          `/api/traces/${arg.toLowerCase()}`,
          `trace ${arg}`,
          parseWaitSeconds(values.wait),
          io,
        );
        io.stdout(values.json ? `${JSON.stringify(trace, null, 2)}\n` : renderWaterfall(trace));
        return 0;
      }
      case 'list': {
        const params = new URLSearchParams();
        if (values.service) params.set('service', values.service);
        if (values.status) params.set('status', values.status);
        if (values['min-duration-ms']) params.set('minDurationMs', values['min-duration-ms']);
        if (values.q) params.set('q', values.q);
        if (values.all) params.set('noise', 'include');
        params.set('limit', values.limit ?? '50');
        const list = await collectorJson<TraceListResponse>(base, `/api/traces?${params}`);
        if (values.json) {
          io.stdout(`${JSON.stringify(list, null, 2)}\n`);
          return 0;
        }
        io.stdout(
          renderTable(
            ['start', 'trace', 'agent', 'root', 'duration', 'spans', 'errors', 'session'],
            list.traces.map((t) => [
              formatTime(t.startTimeUnixNano / 1e6),
              t.traceId,
              t.agentName ?? t.serviceName,
              t.rootName,
              formatDurationNano(t.durationNano),
              t.spanCount,
              t.errorCount || '',
              t.sessionId ?? '',
            ]),
          ),
        );
        return 0;
      }
      case 'export': {
        if (!arg) throw new UsageError('missing <file>');
        const params = new URLSearchParams();
        if (values.trace) params.set('traceId', values.trace);
        const range = timeRange(values);
        if (range.startMs !== undefined) params.set('startMs', String(range.startMs));
        if (range.endMs !== undefined) params.set('endMs', String(range.endMs));
        const text = await (await collectorFetch(base, `/api/export?${params}`)).text();
        await writeFile(arg, text);
        const spans = (text.match(/"spanId"/g) ?? []).length;
        io.stderr(
          `wrote ${arg} (${text.split('\n').filter(Boolean).length} OTLP/JSON line(s), ${spans} ids)\n`,
        );
        return 0;
      }
      case 'import':
        if (!arg) throw new UsageError('missing <file>');
        return importFile(base, arg, io);
      default:
        throw new UsageError(sub ? `unknown subcommand '${sub}'` : 'missing subcommand');
    }
  },
};

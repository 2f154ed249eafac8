import {
  type Price,
  type SessionListResponse,
  type SessionResponse,
  costOfUsage,
  formatUsd,
} from '@agentrt/collector';
import { type CliIO, type Command, UsageError, parseCommandArgs } from '../command.js';
import {
  collectorJson,
  collectorUrl,
  formatDurationNano,
  formatTime,
  renderTable,
} from '../collector-client.js';
import { BEARER_OPTIONS } from '../bearer.js';
import { printSessionSpans } from './session-spans.js';
import { listActiveSessions, stopSession } from './sessions-runtime.js';
import { DEFAULT_WAIT_SECONDS, fetchWhenArrived, parseWaitSeconds } from '../wait-for-spans.js';

const usage = `Usage: agentrt sessions [[get] <sessionId>] [--limit <n>] [--wait <s>] [--json] [--url <collector>]
       agentrt sessions get <sessionId> --spans [--json] [--wait <s>] [--url <collector>]
       agentrt sessions --active [--runtime <name>] [--json] [--runtime-url <url>]
       agentrt sessions stop <sessionId> [--runtime <name>] [--bearer <token> | --bearer-env <var>]
                             [--json] [--runtime-url <url>]

Without an id: the most recent sessions (by session.id) with their trace, span and error counts,
token totals, cost (tokens × the collector's price table) and last activity. With an id: that session's traces in time order.
  --limit <n>   how many sessions to list (default 50, at most 1000)
  --wait <s>    with an id the collector does not know yet: wait this long for its spans (default
                ${DEFAULT_WAIT_SECONDS}; exporters send in batches, so spans arrive seconds after the answer; 0 = no wait)
  --spans       every span of the session's traces, streamed (--json: the collector's span
                records, one JSON object a line)
  --json        print the API response as JSON
  --url <url>   the collector (default $AGENTRT_COLLECTOR_URL or http://127.0.0.1:4318)

The local runtime's live sessions (not their telemetry):
  --active            list them: state, runtime and version, started, last activity, CPU, memory, pid
                      (the runtime's GET /local/sessions; the hosted service has no such listing)
  stop <sessionId>    stop one (StopRuntimeSession); its runtime is found among the active sessions
  --runtime <name>    only this runtime (name, id or ARN)
  --bearer <token>, --bearer-env <var>
                      the token stop sends to a runtime created with --jwt-discovery-url
  --runtime-url <url> the runtime (default $AGENTRT_RUNTIME_URL or http://127.0.0.1:8787)
  --api-key <key>     sent to the runtime as x-api-key (default $AGENTRT_API_KEY)`;

const tokens = (t: { input: number; output: number; total: number }): string =>
  t.total ? `${t.input}/${t.output}` : '';

/** Tokens × the collector's price table; '' without usage, '—' when no model of it has a price. */
const cost = (
  byModel: SessionResponse['session']['tokensByModel'],
  prices: Record<string, Price>,
): string => {
  const c = costOfUsage(byModel, prices);
  if (!c) return '';
  return c.unpriced.length === Object.keys(byModel ?? {}).length ? '—' : formatUsd(c.usd);
};

const options = {
  limit: { type: 'string' },
  wait: { type: 'string' },
  active: { type: 'boolean', default: false },
  spans: { type: 'boolean', default: false },
  runtime: { type: 'string' },
  'runtime-url': { type: 'string' },
  'api-key': { type: 'string' },
  ...BEARER_OPTIONS,
  json: { type: 'boolean', default: false },
  url: { type: 'string' },
} as const;

type Values = ReturnType<
  typeof parseCommandArgs<{ options: typeof options; allowPositionals: true }>
>['values'];

export const sessionsCommand: Command = {
  name: 'sessions',
  summary: 'list agent sessions, or show one session’s traces; list or stop the runtime’s live sessions',
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs({ args: argv, allowPositionals: true, options });
    if (positionals[0] === 'stop') {
      if (positionals.length > 2) throw new UsageError(`unexpected argument '${positionals[2]}'`);
      return stopSession(positionals[1], values, io);
    }
    // `sessions get <id>` reads like `traces get <id>`; `sessions <id>` is the same.
    if (positionals[0] === 'get') {
      if (!positionals[1]) throw new UsageError('sessions get needs a session id');
      positionals.shift();
    }
    if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
    if (values.spans && !positionals[0]) throw new UsageError('--spans goes with a session id');
    if (values.active) {
      if (positionals.length)
        throw new UsageError(`--active lists every live session; drop '${positionals[0]}'`);
      return listActiveSessions(values, io);
    }
    const misplaced = (['runtime', 'runtime-url', 'api-key', 'bearer', 'bearer-env'] as const).find(
      (flag) => values[flag] !== undefined,
    );
    if (misplaced) throw new UsageError(`--${misplaced} goes with --active or stop`);
    const base = collectorUrl(values.url, io);
    const [id] = positionals;
    return id ? showSession(base, id, values, io) : listSessions(base, values, io);
  },
};

const prices = (base: string) =>
  collectorJson<{ prices: Record<string, Price> }>(base, '/api/prices').then((r) => r.prices);

/** One session: its totals, then its traces in time order (or every span with --spans). */
async function showSession(base: string, id: string, values: Values, io: CliIO): Promise<number> {
  const path = `/api/sessions/${encodeURIComponent(id)}`;
  const s = await fetchWhenArrived<SessionResponse>(
    base,
    path,
    `session ${id}`,
    parseWaitSeconds(values.wait),
    io,
  );
  if (values.spans) return printSessionSpans(base, id, values.json, io);
  if (values.json) {
    io.stdout(`${JSON.stringify(s, null, 2)}\n`);
    return 0;
  }
  const x = s.session;
  const priced = await prices(base);
  const sessionCost = cost(x.tokensByModel, priced);
  io.stdout(
    `session ${x.sessionId}  agents ${x.serviceNames.join(', ') || '-'}\n` +
      `${x.traceCount} traces, ${x.spanCount} spans, ${x.errorCount} errors, tokens in/out ${x.tokens.input}/${x.tokens.output}${sessionCost ? `, cost ${sessionCost}` : ''}\n` +
      `${formatTime(x.firstSeenUnixNano / 1e6)} → ${formatTime(x.lastSeenUnixNano / 1e6)}\n\n`,
  );
  const rows = s.traces.map((t) => [
    formatTime(t.startTimeUnixNano / 1e6),
    t.traceId,
    t.rootName + (t.inProgress ? ' (in progress)' : ''),
    formatDurationNano(t.durationNano),
    t.spanCount,
    t.errorCount || '',
    tokens(t.tokens),
    cost(t.tokensByModel, priced),
  ]);
  io.stdout(
    renderTable(['start', 'trace', 'root', 'duration', 'spans', 'errors', 'tokens in/out', 'cost'], rows),
  );
  return 0;
}

/** The most recent sessions with their counts, tokens, cost and last activity. */
async function listSessions(base: string, values: Values, io: CliIO): Promise<number> {
  const limit = values.limit ?? '50';
  if (!/^\d+$/.test(limit)) throw new UsageError('--limit must be a whole number');
  const list = await collectorJson<SessionListResponse>(base, `/api/sessions?limit=${limit}`);
  if (values.json) {
    io.stdout(`${JSON.stringify(list, null, 2)}\n`);
    return 0;
  }
  const priced = await prices(base);
  const rows = list.sessions.map((s) => [
    formatTime(s.lastSeenUnixNano / 1e6),
    s.sessionId,
    s.serviceNames.join(','),
    s.traceCount,
    s.spanCount,
    s.errorCount || '',
    tokens(s.tokens),
    cost(s.tokensByModel, priced),
  ]);
  io.stdout(
    renderTable(
      ['last seen', 'session', 'agents', 'traces', 'spans', 'errors', 'tokens in/out', 'cost'],
      rows,
    ),
  );
  return 0;
}

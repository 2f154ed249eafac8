import type { SessionListResponse, SessionResponse } from '@agentrt/collector';
import { type Command, UsageError, parseCommandArgs } from '../command.js';
import {
  collectorJson,
  collectorUrl,
  formatDurationNano,
  formatTime,
  renderTable,
} from '../collector-client.js';
import { DEFAULT_WAIT_SECONDS, fetchWhenArrived, parseWaitSeconds } from '../wait-for-spans.js';

const usage = `Usage: agentrt sessions [<sessionId>] [--limit <n>] [--wait <s>] [--json] [--url <collector>]

Without an id: the most recent sessions (by session.id) with their trace, span and error counts,
token totals and last activity. With an id: that session's traces in time order.
  --limit <n>   how many sessions to list (default 50, at most 1000)
  --wait <s>    with an id the collector does not know yet: wait this long for its spans (default
                ${DEFAULT_WAIT_SECONDS}; exporters send in batches, so spans arrive seconds after the answer; 0 = no wait)
  --json        print the API response as JSON
  --url <url>   the collector (default $AGENTRT_COLLECTOR_URL or http://127.0.0.1:4318)`;

const tokens = (t: { input: number; output: number; total: number }): string =>
  t.total ? `${t.input}/${t.output}` : '';

export const sessionsCommand: Command = {
  name: 'sessions',
  summary: 'list agent sessions, or show one session’s traces',
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs({
      args: argv,
      allowPositionals: true,
      options: {
        limit: { type: 'string' },
        wait: { type: 'string' },
        json: { type: 'boolean', default: false },
        url: { type: 'string' },
      },
    });
    if (positionals.length > 1) throw new UsageError(`unexpected argument '${positionals[1]}'`);
    const base = collectorUrl(values.url, io);
    const [id] = positionals;
    if (id) {
      const s = await fetchWhenArrived<SessionResponse>(
        base,
        `/api/sessions/${encodeURIComponent(id)}`,
        `session ${id}`,
        parseWaitSeconds(values.wait),
        io,
      );
      if (values.json) {
        io.stdout(`${JSON.stringify(s, null, 2)}\n`);
        return 0;
      }
      const x = s.session;
      io.stdout(
        `session ${x.sessionId}  services ${x.serviceNames.join(', ') || '-'}\n` +
          `${x.traceCount} traces, ${x.spanCount} spans, ${x.errorCount} errors, tokens in/out ${x.tokens.input}/${x.tokens.output}\n` +
          `${formatTime(x.firstSeenUnixNano / 1e6)} → ${formatTime(x.lastSeenUnixNano / 1e6)}\n\n`,
      );
      io.stdout(
        renderTable(
          ['start', 'trace', 'root', 'duration', 'spans', 'errors', 'tokens in/out'],
          s.traces.map((t) => [
            formatTime(t.startTimeUnixNano / 1e6),
            t.traceId,
            t.rootName + (t.inProgress ? ' (in progress)' : ''),
            formatDurationNano(t.durationNano),
            t.spanCount,
            t.errorCount || '',
            tokens(t.tokens),
          ]),
        ),
      );
      return 0;
    }
    const limit = values.limit ?? '50';
    if (!/^\d+$/.test(limit)) throw new UsageError('--limit must be a whole number');
    const list = await collectorJson<SessionListResponse>(base, `/api/sessions?limit=${limit}`);
    if (values.json) {
      io.stdout(`${JSON.stringify(list, null, 2)}\n`);
      return 0;
    }
    io.stdout(
      renderTable(
        ['last seen', 'session', 'services', 'traces', 'spans', 'errors', 'tokens in/out'],
        list.sessions.map((s) => [
          formatTime(s.lastSeenUnixNano / 1e6),
          s.sessionId,
          s.serviceNames.join(','),
          s.traceCount,
          s.spanCount,
          s.errorCount || '',
          tokens(s.tokens),
        ]),
      ),
    );
    return 0;
  },
};

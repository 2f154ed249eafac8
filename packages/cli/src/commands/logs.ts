import type { LogQueryResult, LogRow } from '@agentrt/collector';
import { type Command, UsageError, parseCommandArgs } from '../command.js';
import { collectorJson, collectorUrl, formatTime, parseDurationMs } from '../collector-client.js';

const usage = `Usage: agentrt logs [--session <id>] [--trace <id>] [--service <name>] [--severity <level>] [--grep <text>] [--since <duration>] [--limit <n>] [--follow] [--json] [--url <collector>]

Log records stored by the collector (runtime, worker and agent logs), oldest first, each with its
service, session and trace. --follow keeps printing new records until Ctrl-C.
  --session <id>      records of one session (tagged with it, or of its traces)
  --trace <id>        records of one trace (open it with: agentrt traces show <id>)
  --service <name>    records of one service (e.g. agentrt-runtime)
  --severity <level>  this level and above: debug, info, warn, error, fatal
  --grep <text>       body contains the text (any case)
  --since <dur>       how far back (30s, 15m, 1h, 7d; default: all)
  --limit <n>         most recent n records (default 100, at most 5000)
  --follow            then poll for new records every second
  --json              one JSON record per line
  --url <url>         the collector (default $AGENTRT_COLLECTOR_URL or http://127.0.0.1:4318)`;

const text = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

function line(r: LogRow): string {
  const level = (r.severityText || String(r.severityNumber)).padEnd(5);
  const where = [
    r.service,
    r.sessionId ? `session=${r.sessionId}` : '',
    r.traceId ? `trace=${r.traceId}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return `${formatTime(r.timeUnixNano / 1e6)} ${level} [${where}] ${text(r.body)}\n`;
}

export const logsCommand: Command = {
  name: 'logs',
  summary: 'show log records by session, trace, service or severity (--follow to tail)',
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs({
      args: argv,
      allowPositionals: true,
      options: {
        session: { type: 'string' },
        trace: { type: 'string' },
        service: { type: 'string' },
        severity: { type: 'string' },
        grep: { type: 'string' },
        since: { type: 'string' },
        limit: { type: 'string' },
        follow: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        url: { type: 'string' },
      },
    });
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const base = collectorUrl(values.url, io);
    const limit = values.limit ?? '100';
    if (!/^\d+$/.test(limit)) throw new UsageError('--limit must be a whole number');
    const params = new URLSearchParams({ limit });
    for (const [flag, param] of [
      ['session', 'sessionId'],
      ['trace', 'traceId'],
      ['service', 'service'],
      ['severity', 'severity'],
      ['grep', 'q'],
    ] as const) {
      const v = values[flag];
      if (v) params.set(param, v);
    }
    if (values.since) {
      try {
        params.set('startMs', String(Date.now() - parseDurationMs(values.since, '--since')));
      } catch (error) {
        throw new UsageError((error as Error).message);
      }
    }
    const print = (rows: LogRow[]) => {
      for (const r of rows) io.stdout(values.json ? `${JSON.stringify(r)}\n` : line(r));
    };
    const first = await collectorJson<LogQueryResult>(base, `/api/logs?${params}`);
    print([...first.logs].reverse());
    if (!values.follow) {
      if (!first.logs.length && !values.json) io.stdout('(no log records)\n');
      return 0;
    }
    let cursor = first.cursor;
    let stopped = false;
    const stop = () => (stopped = true);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    params.delete('startMs');
    params.set('limit', '1000');
    try {
      while (!stopped) {
        await new Promise((r) => setTimeout(r, 1000));
        if (stopped) break;
        params.set('after', String(cursor));
        const next = await collectorJson<LogQueryResult>(base, `/api/logs?${params}`);
        print(next.logs);
        cursor = next.cursor;
      }
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
    return 0;
  },
};

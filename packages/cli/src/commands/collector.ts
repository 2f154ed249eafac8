import { createCollector, createJsonLogger, loadConfig, type CollectorConfig } from '@agentrt/collector';
import { type Command, UsageError, parseCommandArgs } from '../command.js';

const usage = `Usage: agentrt collector [--port <n>] [--host <addr>] [--data-dir <dir>] [--store <url>]

Runs the local collector in the foreground: OTLP/HTTP ingest (/v1/traces, /v1/logs, /v1/metrics),
the query API (/api/*) and the web UI, all on one port. Logs JSON lines to stdout; Ctrl-C (SIGINT)
or SIGTERM stops it after writing everything already received.
  --port <n>                    listen port (default $AGENTRT_COLLECTOR_PORT or 4318; 0 = any free port)
  --host <addr>                 bind address (default $AGENTRT_COLLECTOR_HOST or 127.0.0.1; 0.0.0.0 in containers)
  --data-dir <dir>              SQLite store (default $AGENTRT_DATA_DIR or ./.data/collector)
  --store <sqlite|url>          where spans go: sqlite (default $AGENTRT_STORE or sqlite) or
                                clickhouse://user:pass@host:8123/db[?cluster=name&replicated=1]
  --trace-index-percent <0-100> share of traces given a trace summary (default 100)
  --forward <url,url>           also forward everything received to these OTLP/HTTP endpoints`;

export const collectorCommand: Command = {
  name: 'collector',
  summary: 'run the local OTLP collector: transaction search, HTTP API and web UI on one port',
  usage,
  async run(argv, io) {
    const { values } = parseCommandArgs({
      args: argv,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'data-dir': { type: 'string' },
        store: { type: 'string' },
        'trace-index-percent': { type: 'string' },
        forward: { type: 'string' },
      },
    });
    const overrides: Partial<CollectorConfig> = {};
    if (values.port !== undefined) {
      const port = Number(values.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be 0–65535');
      overrides.port = port;
    }
    if (values.host) overrides.host = values.host;
    if (values['data-dir']) overrides.dataDir = values['data-dir'];
    if (values.store) overrides.store = values.store;
    if (values['trace-index-percent'] !== undefined) {
      const pct = Number(values['trace-index-percent']);
      if (!(pct >= 0 && pct <= 100))
        throw new UsageError('--trace-index-percent must be a number from 0 to 100');
      overrides.traceIndexPercent = pct;
    }
    if (values.forward) {
      const urls = values.forward
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const bad = urls.find((u) => !/^https?:\/\//.test(u));
      if (bad) throw new UsageError(`--forward: '${bad}' is not an http(s) URL`);
      overrides.forwardEndpoints = urls;
    }
    const { config, warnings } = loadConfig(io.env, overrides, io.cwd);
    const logger = createJsonLogger(io.stdout, { service: 'agentrt-collector' });
    for (const w of warnings) logger.warn(w);
    const collector = await createCollector({ ...config, logger });
    logger.info('listening', {
      url: collector.url,
      dataDir: config.dataDir,
      store: collector.backend.location,
      traceIndexPercent: config.traceIndexPercent,
      forwardEndpoints: config.forwardEndpoints,
    });
    io.stderr(
      `collector on ${collector.url} — UI at ${collector.url}/, OTLP at ${collector.url}/v1/traces (Ctrl-C to stop)\n`,
    );
    const signal = await new Promise<string>((resolve) => {
      const stop = (name: string) => () => {
        process.off('SIGINT', onInt);
        process.off('SIGTERM', onTerm);
        resolve(name);
      };
      const onInt = stop('SIGINT');
      const onTerm = stop('SIGTERM');
      process.on('SIGINT', onInt);
      process.on('SIGTERM', onTerm);
    });
    logger.info('shutting down', { signal });
    await collector.close();
    logger.info('stopped');
    return 0;
  },
};

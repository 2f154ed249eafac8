#!/usr/bin/env node
// The collector process: reads config from the environment, logs JSON lines to stdout, and on
// SIGTERM/SIGINT stops accepting, writes everything queued and closes the store.
import { loadConfig } from './config.js';
import { createCollector } from './http/collector.js';
import { createJsonLogger } from './logger.js';

// A reader of stdout that went away (its pipe closed: EPIPE) loses the log lines, not the collector.
process.stdout.on('error', () => undefined);
const logger = createJsonLogger((line) => process.stdout.write(line), { service: 'agentrt-collector' });
const { config, warnings } = loadConfig(process.env);
for (const w of warnings) logger.warn(w);
if (!/^(127\.|::1$|localhost$)/.test(config.host) && (!config.ingestToken || !config.queryToken)) {
  logger.warn(
    'listening beyond loopback without AGENTRT_INGEST_TOKEN and AGENTRT_QUERY_TOKEN: anyone who reaches this port can write and read spans',
    { host: config.host },
  );
}

try {
  const collector = await createCollector({ ...config, logger });
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    collector.close().then(
      () => {
        logger.info('stopped');
        process.exitCode = 0;
      },
      (error: unknown) => {
        logger.error('shutdown failed', { error });
        process.exitCode = 1;
      },
    );
  };
  // before the line that says it is up: a supervisor may signal the moment it reads that line
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  logger.info('listening', {
    url: collector.url,
    dataDir: config.dataDir,
    store: collector.backend.location,
    traceIndexPercent: config.traceIndexPercent,
  });
} catch (error) {
  logger.error('could not start', { error, host: config.host, port: config.port });
  process.exitCode = 1;
}

#!/usr/bin/env node
// Runs the runtime as a service: `node dist/main.js` (settings from AGENTRT_* env vars).
import { createLogger } from '@agentrt/kit';
import { createRuntimeServer } from './server.js';

// A reader of stdout that went away (its pipe closed: EPIPE) loses the log lines, not the runtime
// and every session it runs.
process.stdout.on('error', () => undefined);

// The handlers come before the server is up, since a supervisor may answer its "runtime
// listening" line with a signal at once: a signal during start-up stops it as soon as it is up.
const started = createRuntimeServer();
let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  createLogger({ write: (line) => process.stderr.write(line) }).info(`${signal}: stopping workers`);
  void started.then((server) => server.close()).then(() => process.exit(0));
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
await started;

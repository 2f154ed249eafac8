#!/usr/bin/env node
// Runs the runtime as a service: `node dist/main.js` (settings from AGENTRT_* env vars).
import { createRuntimeServer } from './server.js';

const server = await createRuntimeServer();
let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  process.stderr.write(
    `${JSON.stringify({ time: new Date().toISOString(), level: 'info', msg: `${signal}: stopping workers` })}\n`,
  );
  void server.close().then(() => process.exit(0));
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));

#!/usr/bin/env node
/**
 * `agentrt-instrument <command> [args...]`: runs the command with `--import @agentrt/instrument`
 * added to NODE_OPTIONS (like `opentelemetry-instrument` in Python), forwards SIGINT/SIGTERM/SIGHUP
 * to it, and exits with its exit code, or re-raises the signal that killed it.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { buildNodeOptions } from './node-options.js';

const [command, ...args] = process.argv.slice(2);
if (command === undefined || command === '--help' || command === '-h') {
  process.stderr.write(
    'usage: agentrt-instrument <command> [args...]\n' +
      '  e.g. agentrt-instrument node app.js\n' +
      'Runs the command with OpenTelemetry preloaded (NODE_OPTIONS=--import @agentrt/instrument).\n',
  );
  process.exit(command === undefined ? 2 : 0);
}

const preload = fileURLToPath(new URL('./register.js', import.meta.url));
const child = spawn(command, args, {
  stdio: 'inherit',
  env: { ...process.env, NODE_OPTIONS: buildNodeOptions(process.env.NODE_OPTIONS, preload) },
});

const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
for (const signal of forwarded) {
  process.on(signal, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  });
}

child.on('error', (error) => {
  process.stderr.write(`agentrt-instrument: cannot run ${command}: ${error.message}\n`);
  process.exit(127);
});

child.on('exit', (code, signal) => {
  if (signal !== null) {
    for (const s of forwarded) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});

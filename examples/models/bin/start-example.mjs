#!/usr/bin/env node
// Starts an example's built entry the way its container does: `node --require @agentrt/instrument
// <entry>` when @agentrt/instrument is installed and built, plain `node <entry>` otherwise (with a
// note on stderr). Used by each example's `npm start` after `tsc -b`.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const [entry = 'dist/main.js', ...rest] = process.argv.slice(2);
const require = createRequire(join(process.cwd(), 'package.json'));
let preload = [];
try {
  const resolved = require.resolve('@agentrt/instrument');
  if (existsSync(resolved)) preload = ['--require', '@agentrt/instrument'];
} catch {
  // not installed: run without telemetry
}
if (preload.length === 0) {
  process.stderr.write('start-example: @agentrt/instrument is not available; starting without telemetry\n');
}
const args = [...preload, entry, ...rest];
if (typeof process.execve === 'function') {
  // Replace this process, so signals reach the example directly (Node >= 22.15).
  process.execve(process.execPath, [process.execPath, ...args], process.env);
}
const child = spawn(process.execPath, args, { stdio: 'inherit' });
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));

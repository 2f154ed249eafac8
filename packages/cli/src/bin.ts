#!/usr/bin/env node
import { main } from './main.js';

const code = await main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
  stdin: process.stdin,
});
// Long-running commands (collector, runtime start, dev) resolve only when they have shut down.
process.exitCode = code;

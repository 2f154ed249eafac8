#!/usr/bin/env node
// The static imports are Node built-ins and files that load on any Node >= 18: the version is
// checked before anything that needs node:sqlite is imported.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CliIO } from './command.js';
import { findRepoRoot } from './dev/repo-root.js';
import { NODE_FLOOR, nodeVersionProblem } from './node-version.js';

const argv = process.argv.slice(2);

// The reader of stdout went away (`agentrt sessions | head`): nothing more is written, and the
// command ends quietly, as on SIGTERM when it handles that (dev, collector, logs --follow) and at once
// otherwise.
let stdoutClosed = false;
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  if (stdoutClosed) return;
  stdoutClosed = true;
  if (process.listenerCount('SIGTERM') > 0) process.kill(process.pid, 'SIGTERM');
  else process.exit(0);
});

const io: CliIO = {
  stdout: (text) => {
    if (!stdoutClosed) process.stdout.write(text);
  },
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
  stdin: process.stdin,
};

/**
 * Runs this file again under the Node that scripts/ensure-node.sh puts on PATH (fetched into .node/
 * the first time; it says so in one line), and resolves with that run's exit code.
 */
function rerunUnderPinnedNode(problem: string): Promise<number> {
  const root = findRepoRoot();
  if (!root || !existsSync(join(root, 'scripts/ensure-node.sh'))) {
    io.stderr(`agentrt: ${problem}; install Node ${NODE_FLOOR} or newer (https://nodejs.org).\n`);
    return Promise.resolve(1);
  }
  // ensure-node.sh finds the repo from the current folder under plain sh.
  const script = 'here=$PWD; cd "$1" && . ./scripts/ensure-node.sh && cd "$here" && shift && exec node "$@"';
  const child = spawn('sh', ['-c', script, 'sh', root, fileURLToPath(import.meta.url), ...argv], {
    stdio: 'inherit',
  });
  // Ctrl-C reaches the child from the terminal itself (same process group); a second SIGINT would
  // cut its shutdown short. SIGTERM and SIGHUP sent to this process alone are passed on.
  const ignore = () => {};
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  process.on('SIGINT', ignore);
  process.on('SIGTERM', forward);
  process.on('SIGHUP', forward);
  return new Promise((resolve) => {
    child.once('error', (error) => {
      io.stderr(`agentrt: ${problem}, and running it under a newer one failed: ${error.message}\n`);
      resolve(1);
    });
    child.once('exit', (code, signal) => {
      process.off('SIGINT', ignore);
      process.off('SIGTERM', forward);
      process.off('SIGHUP', forward);
      if (signal) process.kill(process.pid, signal);
      resolve(code ?? 1);
    });
  });
}

async function run(): Promise<number> {
  const problem = nodeVersionProblem();
  if (!problem) {
    const { main } = await import('./main.js');
    return main(argv, io);
  }
  // doctor is the one command that runs on an old Node: reporting it is its job.
  if (argv[0] !== 'doctor') return rerunUnderPinnedNode(problem);
  const [{ runCommand }, { doctorCommand }] = await Promise.all([
    import('./main.js'),
    import('./commands/doctor.js'),
  ]);
  return runCommand(doctorCommand, argv.slice(1), io);
}

// Long-running commands (collector, runtime start, dev) resolve only when they have shut down.
process.exitCode = await run();

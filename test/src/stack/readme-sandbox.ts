// Runs README command blocks as a user pastes them, inside a bubblewrap sandbox that readme-run.test.ts
// starts: its own network namespace (a private loopback, so the documented default ports 4318, 8080,
// 8787, ... are free and the text needs no rewriting) and its own PID namespace (when this process
// ends, the kernel ends everything the blocks started). Reads a plan (JSON) from the file named by
// argv[2]; prints one JSON line per command to stdout. Only node: modules, so it runs from dist as is.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, chmodSync, constants, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One README block: `run` lines one after another; `background` and `stack` lines left running. */
export interface SandboxStep {
  file: string;
  line: number;
  kind: 'run' | 'background' | 'stack' | 'file';
  /** file: the file's name and text (written to the working directory). */
  commands: string[];
  /** background: URLs that must answer (any status) before the next block runs. */
  ready: string[];
}

export interface SandboxPlan {
  repoRoot: string;
  /** A scratch directory: HOME, logs, and the curl shim live here. */
  scratch: string;
  /** Where the commands run: the repo root, or a scratch directory holding the README's files. */
  cwd: string;
  steps: SandboxStep[];
  /** Per command (ms); builds and nested test runs are slow on a loaded machine. */
  commandTimeoutMs: number;
  readyTimeoutMs: number;
}

export interface SandboxResult {
  file: string;
  line: number;
  command: string;
  kind: SandboxStep['kind'];
  code: number | null;
  ms: number;
  stdout: string;
  stderr: string;
}

// Stricter than a user's eye, not different from their text: an HTTP error answer fails the command
// (--fail-with-body), unless the line asks to see the status line with -i (those show errors on purpose).
const CURL_SHIM = `#!/bin/sh
for a in "$@"; do case "$a" in -i|-si|-is|-sSi|--include) exec "$REAL_CURL" "$@";; esac; done
exec "$REAL_CURL" --fail-with-body "$@"
`;

function which(name: string, path: string): string {
  const found = path
    .split(':')
    .map((dir) => join(dir, name))
    .find((file) => {
      try {
        accessSync(file, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  if (!found) throw new Error(`${name} is not on PATH`);
  return found;
}

async function main(): Promise<void> {
  const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as SandboxPlan;
  const home = join(plan.scratch, 'home');
  const shim = join(plan.scratch, 'bin');
  const logs = join(plan.scratch, 'logs');
  for (const dir of [home, shim, logs]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(shim, 'curl'), CURL_SHIM);
  chmodSync(join(shim, 'curl'), 0o755);
  const basePath = `${join(process.execPath, '..')}:${process.env['PATH'] ?? ''}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    PATH: `${shim}:${basePath}`,
    REAL_CURL: which('curl', basePath),
  };
  const background: ChildProcess[] = [];
  const report = (result: SandboxResult) => process.stdout.write(`${JSON.stringify(result)}\n`);

  const runLine = (command: string, step: SandboxStep) =>
    new Promise<SandboxResult>((resolve) => {
      const started = Date.now();
      const child = spawn('bash', ['-c', command], {
        cwd: plan.cwd,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      const timer = setTimeout(() => child.kill('SIGKILL'), plan.commandTimeoutMs);
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        resolve({
          file: step.file,
          line: step.line,
          command,
          kind: step.kind,
          code: code ?? (signal ? 128 : null),
          ms: Date.now() - started,
          stdout: stdout.slice(-20_000),
          stderr:
            (signal === 'SIGKILL' ? `killed after ${plan.commandTimeoutMs} ms\n` : '') +
            stderr.slice(-20_000),
        });
      });
    });

  const startBackground = (command: string, step: SandboxStep, index: number) => {
    const logFile = join(logs, `${step.file.replaceAll('/', '_')}-${step.line}-${index}.log`);
    const fd = openSync(logFile, 'w');
    const child = spawn('bash', ['-c', command], {
      cwd: plan.cwd,
      env,
      stdio: ['ignore', fd, fd],
      detached: true,
    });
    background.push(child);
    return { child, logFile };
  };

  /** A server is up once its port accepts a connection (HTTP/1, h2c or anything else). */
  const answers = (url: string) =>
    new Promise<boolean>((resolve) => {
      const { hostname, port, protocol } = new URL(url);
      const socket = connect({ host: hostname, port: Number(port || (protocol === 'https:' ? 443 : 80)) });
      socket.setTimeout(2_000);
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
      socket.once('timeout', () => done(false));
    });

  for (const step of plan.steps) {
    if (step.kind === 'file') {
      const [name, text = ''] = step.commands;
      writeFileSync(join(plan.cwd, name!), text);
      continue;
    }
    if (step.kind === 'run') {
      for (const command of step.commands) {
        report(await runLine(command, step));
      }
      continue;
    }
    const commands = step.commands;
    const started = Date.now();
    const procs = commands.map((c, i) => ({ command: c, ...startBackground(c, step, i) }));
    const deadline = started + plan.readyTimeoutMs;
    let failed: { command: string; why: string; logFile: string } | undefined;
    const pending = new Set(step.kind === 'stack' ? [] : step.ready);
    for (;;) {
      const exited = procs.find((p) => p.child.exitCode !== null || p.child.signalCode !== null);
      if (exited) {
        failed = {
          command: exited.command,
          why: `exited (${exited.child.exitCode ?? exited.child.signalCode}) while starting`,
          logFile: exited.logFile,
        };
        break;
      }
      if (step.kind === 'stack') {
        if (/agentrt dev is running\./.test(readFileSync(procs[0]!.logFile, 'utf8'))) break;
      } else {
        for (const url of [...pending]) if (await answers(url)) pending.delete(url);
        if (pending.size === 0) break;
      }
      if (Date.now() > deadline) {
        failed = {
          command: procs[0]!.command,
          why: `not ready after ${plan.readyTimeoutMs} ms (waiting for ${[...pending].join(', ') || 'agentrt dev is running.'})`,
          logFile: procs[0]!.logFile,
        };
        break;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    for (const p of procs) {
      const mine = failed?.command === p.command;
      report({
        file: step.file,
        line: step.line,
        command: p.command,
        kind: step.kind,
        code: mine ? 1 : 0,
        ms: Date.now() - started,
        stdout: mine ? readFileSync(p.logFile, 'utf8').slice(-20_000) : '',
        stderr: mine ? failed!.why : '',
      });
    }
    if (failed) return;
  }
  for (const child of background) {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  // Give servers a moment to flush; the PID namespace ends whatever is left when this process exits.
  await new Promise((r) => setTimeout(r, 1_000));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await main();
  process.exit(0);
}

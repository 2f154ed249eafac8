/**
 * Test support for the examples: read a Dockerfile the way `docker build` would (instructions,
 * stages, the final stage's ENV, WORKDIR and exec-form CMD), and run that CMD as a real child
 * process from the example's folder with the environment the image sets, so a test exercises the
 * exact container command without a Docker engine.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';

export interface DockerInstruction {
  /** Upper-case keyword: FROM, RUN, COPY, ENV, USER, EXPOSE, HEALTHCHECK, CMD, ... */
  readonly keyword: string;
  /** Everything after the keyword, continuation lines joined. */
  readonly args: string;
  /** Index of the build stage (0 = first FROM). */
  readonly stage: number;
  readonly line: number;
}

export interface ParsedDockerfile {
  readonly instructions: readonly DockerInstruction[];
  /** Number of FROM instructions. */
  readonly stageCount: number;
  /** Instructions of the last stage (the image that ships). */
  readonly finalStage: readonly DockerInstruction[];
}

/** Parses Dockerfile text: comments and parser directives skipped, `\` continuations joined. */
export function parseDockerfile(text: string): ParsedDockerfile {
  const instructions: DockerInstruction[] = [];
  const lines = text.split(/\r?\n/);
  let stage = -1;
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const startLine = i + 1;
    while (line.endsWith('\\') && i + 1 < lines.length) {
      const next = lines[++i]!.trim();
      line = `${line.slice(0, -1).trimEnd()} ${next.startsWith('#') ? '' : next}`.trim();
    }
    const match = /^(\S+)\s*(.*)$/s.exec(line);
    if (!match) continue;
    const keyword = match[1]!.toUpperCase();
    if (keyword === 'FROM') stage++;
    instructions.push({ keyword, args: match[2]!.trim(), stage, line: startLine });
  }
  return {
    instructions,
    stageCount: stage + 1,
    finalStage: instructions.filter((inst) => inst.stage === stage),
  };
}

/** `ENV A=1 B="two"` (or the legacy `ENV A 1`) to a record. */
export function parseEnvInstruction(args: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(args)) {
    const [key, ...rest] = args.split(/\s+/);
    if (key) out[key] = rest.join(' ');
    return out;
  }
  for (const match of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    const raw = match[2]!;
    out[match[1]!] = raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
  }
  return out;
}

export interface ContainerCommand {
  /** The exec-form CMD, e.g. ["node", "--require", "@agentrt/instrument", "dist/main.js"]. */
  readonly argv: readonly string[];
  /** ENV of the final stage, in order. */
  readonly env: Readonly<Record<string, string>>;
  readonly workdir: string | undefined;
  readonly parsed: ParsedDockerfile;
}

/**
 * Replaces `$NAME` / `${NAME}` with the build's ARG values (declared defaults, then `buildArgs`),
 * as docker does in ENV, WORKDIR, EXPOSE and the like; an undeclared name stays as written.
 */
function expandArgs(text: string, args: Readonly<Record<string, string>>): string {
  return text.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (whole, name: string) => args[name] ?? whole);
}

/**
 * The final stage's CMD (exec form required), ENV and WORKDIR of a Dockerfile, with `buildArgs`
 * (`--build-arg NAME=value`) over the ARG defaults expanded in the final stage's instructions.
 */
export function readContainerCommand(
  dockerfilePath: string,
  buildArgs: Readonly<Record<string, string>> = {},
): ContainerCommand {
  const text = parseDockerfile(readFileSync(dockerfilePath, 'utf8'));
  const last = text.stageCount - 1;
  const args: Record<string, string> = {};
  for (const inst of text.instructions.filter((i) => i.keyword === 'ARG' && i.stage === last)) {
    const [name, value] = inst.args.split(/=(.*)/s) as [string, string | undefined];
    args[name] = buildArgs[name] ?? value ?? '';
  }
  const instructions = text.instructions.map((inst) =>
    inst.stage === last && inst.keyword !== 'RUN' ? { ...inst, args: expandArgs(inst.args, args) } : inst,
  );
  const parsed = { ...text, instructions, finalStage: instructions.filter((i) => i.stage === last) };
  const cmd = parsed.finalStage.filter((i) => i.keyword === 'CMD').at(-1);
  if (!cmd) throw new Error(`${dockerfilePath}: the final stage has no CMD`);
  const argv = JSON.parse(cmd.args) as unknown;
  if (!Array.isArray(argv) || !argv.every((a) => typeof a === 'string')) {
    throw new Error(`${dockerfilePath}: CMD must be the exec form (a JSON array of strings)`);
  }
  const env: Record<string, string> = {};
  for (const inst of parsed.finalStage.filter((i) => i.keyword === 'ENV'))
    Object.assign(env, parseEnvInstruction(inst.args));
  const workdir = parsed.finalStage.filter((i) => i.keyword === 'WORKDIR').at(-1)?.args;
  return { argv, env, workdir, parsed };
}

/**
 * The Dockerfile an example's image is built from: its own, else the shared `examples/Dockerfile`
 * with `EXAMPLE=<folder name>` (plus `buildArgs`).
 */
export function exampleDockerfile(
  exampleDir: string,
  buildArgs: Readonly<Record<string, string>> = {},
): { path: string; buildArgs: Record<string, string> } {
  const own = join(exampleDir, 'Dockerfile');
  if (existsSync(own)) return { path: own, buildArgs: { ...buildArgs } };
  return {
    path: join(exampleDir, '..', 'Dockerfile'),
    buildArgs: { EXAMPLE: basename(exampleDir), ...buildArgs },
  };
}

function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    child.kill('SIGKILL'); // the group is already gone; make sure the leader is too
  }
}

export interface RunningContainer {
  readonly child: ChildProcess;
  /** Every JSON log line written to stdout so far. */
  readonly logs: Record<string, unknown>[];
  /** Everything written to stderr so far. */
  readonly stderr: () => string;
  /** Resolves with the first log line that matches (rejects after `timeoutMs` or on exit). */
  waitForLog(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  /** Resolves with the exit code and signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` (default SIGTERM), SIGKILLs after `timeoutMs`, resolves on exit. */
  stop(
    signal?: NodeJS.Signals,
    timeoutMs?: number,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Runs an example's container command from its folder (the image's WORKDIR) with the image's ENV
 * plus `env` (which wins). Only PATH and HOME are taken from this process, as in a container.
 */
export function startContainerCommand(
  exampleDir: string,
  env: Record<string, string> = {},
): RunningContainer {
  const image = exampleDockerfile(exampleDir);
  const command = readContainerCommand(image.path, image.buildArgs);
  const [program, ...args] = command.argv;
  const child = spawn(program === 'node' ? process.execPath : program!, args, {
    cwd: exampleDir,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...command.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so a stuck run (primary plus cluster workers) can be killed whole.
    detached: true,
  });
  const logs: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  let stderr = '';
  let pending = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        logs.push({ msg: line, unparsed: true });
      }
    }
    for (const wake of waiters) wake();
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      resolve({ code, signal });
      for (const wake of waiters) wake();
    }),
  );
  const waitForLog: RunningContainer['waitForLog'] = (match, timeoutMs = 20_000) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(
          new Error(
            `no matching log line within ${timeoutMs} ms; stdout: ${JSON.stringify(logs).slice(-2000)}; stderr: ${stderr.slice(-2000)}`,
          ),
        );
      }, timeoutMs);
      const check = () => {
        const found = logs.find(match);
        if (found) {
          clearTimeout(timer);
          waiters.delete(check);
          resolve(found);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          clearTimeout(timer);
          waiters.delete(check);
          reject(
            new Error(
              `process exited (${child.exitCode ?? child.signalCode}) before the log line; stderr: ${stderr.slice(-2000)}`,
            ),
          );
        }
      };
      waiters.add(check);
      check();
    });
  const stop: RunningContainer['stop'] = async (signal = 'SIGTERM', timeoutMs = 30_000) => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      const timer = setTimeout(() => killGroup(child), timeoutMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    }
    return exited;
  };
  return { child, logs, stderr: () => stderr, waitForLog, exited, stop };
}

export interface ImageExpectations {
  /** The port the image EXPOSEs and its HEALTHCHECK calls. */
  readonly port: number;
  /** The path its HEALTHCHECK requests, e.g. `/health` or `/ping`; empty: it only connects to the port. */
  readonly healthPath: string;
  /** The final WORKDIR, e.g. `/app/examples/weather`. */
  readonly workdir: string;
}

/**
 * The problems of an example's Dockerfile (empty when none): multi-stage, pinned Node base images,
 * the shipped stage built for the target platform (buildx multi-arch), non-root USER, EXPOSE of the
 * port, a HEALTHCHECK on the health path, ENV PORT, and the instrumented exec-form CMD.
 */
export function checkDockerfile(
  dockerfilePath: string,
  expected: ImageExpectations,
  buildArgs: Readonly<Record<string, string>> = {},
): string[] {
  const problems: string[] = [];
  const { argv, env, workdir, parsed } = readContainerCommand(dockerfilePath, buildArgs);
  const final = parsed.finalStage;
  if (parsed.stageCount < 2) problems.push('not multi-stage');
  const froms = parsed.instructions.filter((i) => i.keyword === 'FROM');
  for (const from of froms) {
    if (!/node:\d+\.\d+\.\d+-/.test(from.args))
      problems.push(`line ${from.line}: base image not pinned to a Node version: ${from.args}`);
  }
  if (froms.at(-1)?.args.includes('--platform'))
    problems.push('the final stage pins --platform (breaks multi-arch builds)');
  const user = final.filter((i) => i.keyword === 'USER').at(-1)?.args;
  if (!user || ['root', '0', '0:0'].includes(user))
    problems.push(`final stage runs as ${user ?? 'root (no USER)'}`);
  const exposed = final.filter((i) => i.keyword === 'EXPOSE').map((i) => i.args);
  if (!exposed.includes(String(expected.port)))
    problems.push(`EXPOSE ${expected.port} missing (has ${exposed.join(', ') || 'none'})`);
  const health = final.find((i) => i.keyword === 'HEALTHCHECK');
  if (!health) problems.push('no HEALTHCHECK');
  else if (
    // Literally, or through the image's ENV (a HEALTHCHECK's exec form is not expanded at build).
    !(
      health.args.includes(expected.healthPath) ||
      (health.args.includes('HEALTH_PATH') && env.HEALTH_PATH === expected.healthPath)
    ) ||
    !(health.args.includes(String(expected.port)) || health.args.includes('process.env.PORT'))
  ) {
    problems.push(`HEALTHCHECK does not call ${expected.healthPath} on ${expected.port}`);
  }
  if (env.PORT !== String(expected.port))
    problems.push(`ENV PORT is ${env.PORT ?? 'unset'}, not ${expected.port}`);
  if (workdir !== expected.workdir)
    problems.push(`WORKDIR is ${workdir ?? 'unset'}, not ${expected.workdir}`);
  const wanted = ['node', '--require', '@agentrt/instrument', 'dist/main.js'];
  if (JSON.stringify(argv) !== JSON.stringify(wanted))
    problems.push(`CMD is ${JSON.stringify(argv)}, not ${JSON.stringify(wanted)}`);
  return problems;
}

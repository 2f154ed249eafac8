import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

/** One child process of the dev stack. */
export interface ServiceSpec {
  /** Short name shown in progress lines and used for its log file (`<logDir>/<name>.log`). */
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
  /** Resolves true once the service is ready (e.g. a health URL answers 2xx). Polled until the deadline. */
  ready: () => Promise<boolean>;
  /** How long the service may take to become ready. */
  readyTimeoutMs: number;
  /** Stop it only after all the others (e.g. the collector, so the others' last telemetry lands). */
  stopLast?: boolean;
}

export interface RunningService {
  name: string;
  pid: number;
  logFile: string;
  /** The last lines it printed (stdout and stderr), for error messages. */
  tail(): string;
}

export interface SupervisorOptions {
  logDir: string;
  /** Between SIGTERM and SIGKILL of a service's process group on stop. */
  stopGraceMs?: number;
  /** Called when a service exits on its own after it was started (not during stop). */
  onUnexpectedExit?: (name: string, code: number | null, signal: NodeJS.Signals | null, tail: string) => void;
  /** Called with every line a service prints (for --verbose). */
  onLine?: (name: string, line: string) => void;
}

export interface Supervisor {
  /** Spawns the service in its own process group and waits until it is ready; throws ServiceStartError. */
  start(spec: ServiceSpec): Promise<RunningService>;
  /**
   * Stops every service: SIGTERM to its process group, SIGKILL after the grace period. All at once,
   * except the `stopLast` ones, which are stopped after the others are gone.
   */
  stopAll(): Promise<void>;
  /** The services started so far, oldest first. */
  readonly services: readonly RunningService[];
}

/** A service that exited, or did not become ready, while starting. */
export class ServiceStartError extends Error {
  override name = 'ServiceStartError';
  constructor(
    readonly service: string,
    message: string,
    readonly tail: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

const TAIL_LINES = 40;
const READY_POLL_MS = 100;

interface Entry extends RunningService {
  child: ChildProcess;
  stopLast: boolean;
  exited: Promise<void>;
  stopping: boolean;
  log: WriteStream;
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    // EPERM means it exists but is not ours to signal; treat it as alive so we report it.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the whole group is already gone, which is what we want.
  }
}

/**
 * Writes what a child prints (stdout and stderr) to its log file and hands each line to `onLine`;
 * returns its last lines. The log file ends once every pipe has closed: grandchildren (cluster
 * workers) may hold the pipes after the leader exits, and late output is neither lost nor written
 * after the end.
 */
function captureOutput(child: ChildProcess, log: WriteStream, onLine: (line: string) => void): () => string {
  const lines: string[] = [];
  let partial = '';
  const onData = (chunk: Buffer) => {
    log.write(chunk);
    const parts = (partial + chunk.toString('utf8')).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      lines.push(line);
      if (lines.length > TAIL_LINES) lines.shift();
      onLine(line);
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  child.once('close', () => log.end());
  // A log file that cannot be written must not take agentrt dev down; the tail still has the lines.
  log.on('error', () => {});
  return () => [...lines, partial].filter(Boolean).join('\n');
}

interface ExitWatch {
  /** Resolves when the child exited or could not be spawned. */
  exited: Promise<void>;
  info(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  spawnError(): Error | undefined;
}

function watchExit(child: ChildProcess): ExitWatch {
  let info: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let spawnError: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('error', (error) => {
      spawnError = error;
      resolve();
    });
    child.once('exit', (code, signal) => {
      info = { code, signal };
      resolve();
    });
  });
  return { exited, info: () => info, spawnError: () => spawnError };
}

/** Polls the service's readiness until its deadline; throws ServiceStartError if it ends or stalls first. */
async function waitReady(spec: ServiceSpec, entry: Entry, exit: ExitWatch): Promise<void> {
  const fail = (message: string, cause?: Error) =>
    new ServiceStartError(spec.name, `${spec.name} ${message}`, entry.tail(), cause && { cause });
  const deadline = Date.now() + spec.readyTimeoutMs;
  for (;;) {
    const spawnError = exit.spawnError();
    if (spawnError) throw fail(`could not be started: ${spawnError.message}`, spawnError);
    if (entry.stopping) throw fail('was stopped while starting');
    const info = exit.info();
    if (info)
      throw fail(`exited with ${info.signal ? `signal ${info.signal}` : `code ${info.code}`} while starting`);
    if (await spec.ready().catch(() => false)) return;
    if (Date.now() > deadline) throw fail(`was not ready after ${Math.round(spec.readyTimeoutMs / 1000)} s`);
    await Promise.race([delay(READY_POLL_MS), exit.exited]);
  }
}

/**
 * Runs the dev stack's services as child processes, each the leader of its own process group so that
 * everything it forks (cluster workers, session workers) is stopped with it and nothing is orphaned.
 */
export function createSupervisor(options: SupervisorOptions): Supervisor {
  const stopGraceMs = options.stopGraceMs ?? 5_000;
  const entries: Entry[] = [];

  async function start(spec: ServiceSpec): Promise<RunningService> {
    await mkdir(options.logDir, { recursive: true });
    const logFile = join(options.logDir, `${spec.name}.log`);
    const log = createWriteStream(logFile, { flags: 'w' });
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env,
      detached: true, // own process group: we signal -pid
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const tail = captureOutput(child, log, (line) => options.onLine?.(spec.name, line));
    const exit = watchExit(child);
    const entry: Entry = {
      name: spec.name,
      pid: child.pid ?? -1,
      logFile,
      tail,
      child,
      exited: exit.exited,
      stopping: false,
      stopLast: spec.stopLast ?? false,
      log,
    };
    entries.push(entry);
    let startedOk = false;
    void exit.exited.then(() => {
      const info = exit.info();
      if (!entry.stopping && child.pid !== undefined && startedOk)
        options.onUnexpectedExit?.(spec.name, info?.code ?? null, info?.signal ?? null, tail());
    });
    await waitReady(spec, entry, exit);
    startedOk = true;
    return { name: entry.name, pid: entry.pid, logFile, tail };
  }

  async function stopOne(entry: Entry): Promise<void> {
    entry.stopping = true;
    const pgid = entry.pid;
    if (pgid <= 0) return;
    signalGroup(pgid, 'SIGTERM');
    const deadline = Date.now() + stopGraceMs;
    await Promise.race([entry.exited, delay(stopGraceMs)]);
    // The leader is gone; wait for the rest of its group (workers draining) until the same deadline.
    while (groupAlive(pgid) && Date.now() < deadline) await delay(50);
    if (groupAlive(pgid)) signalGroup(pgid, 'SIGKILL');
    await entry.exited;
    // SIGKILLed members linger as zombies until init reaps them; give that a moment.
    const reapDeadline = Date.now() + 2_000;
    while (groupAlive(pgid) && Date.now() < reapDeadline) await delay(20);
  }

  async function stopAll(): Promise<void> {
    await Promise.all(entries.filter((e) => !e.stopLast).map(stopOne));
    await Promise.all(entries.filter((e) => e.stopLast).map(stopOne));
  }

  return {
    start,
    stopAll,
    get services() {
      return entries.map(({ name, pid, logFile, tail }) => ({ name, pid, logFile, tail }));
    },
  };
}

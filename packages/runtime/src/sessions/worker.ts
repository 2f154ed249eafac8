import { type ChildProcess } from 'node:child_process';
import { lstatSync } from 'node:fs';
import { Agent } from 'node:http';
import { type Logger } from '../logger.js';
import { childrenOf, running } from '../telemetry/process-usage.js';
import { type CgroupUsage } from './cgroups.js';
import { spawnHelper } from './helpers.js';
import { preloadsInstrument } from './instrument-preload.js';
import { type PingState, healthProbe } from './worker-probe.js';
import { EXPORTED_BY_AGENT, exportedByInstrument, parseWorkerLine } from './worker-output.js';

export type WorkerExit = { code: number | null; signal: NodeJS.Signals | null };

export interface Worker {
  readonly id: string;
  readonly pid: number;
  readonly port: number;
  /** The address it listens on when not this host's loopback (a session pod's IP). */
  readonly host?: string | undefined;
  /** The pod it runs in (the kubernetes backend), named on the runtime's spans. */
  readonly podName?: string | undefined;
  /**
   * How its cluster launched it, once known: `warm` when a SandboxClaim adopted a warm-pool
   * sandbox, `cold` when it made one (agent-sandbox mode). Absent: the session manager decided.
   */
  launchType?(): 'warm' | 'cold' | undefined;
  /** When set, requests reach the worker through this Unix socket (its sandbox's bridge), not `port`. */
  readonly socketPath: string | undefined;
  /** The sandbox's first process (host pid) once bwrap reported it: commands join its namespaces. */
  readonly sandboxPid: number | undefined;
  /** Keep-alive agent for requests to this worker. */
  readonly agent: Agent;
  readonly exited: WorkerExit | undefined;
  /**
   * Whether its process is known to have ended though its exit is not heard yet: a sandboxed worker
   * gone or a zombie (bwrap, and the bridge in the sandbox, outlive it for a moment: a call sent now
   * is accepted and reaches nothing). Absent: only `exited` tells.
   */
  ended?(): boolean;
  /** Resolves when `/ping` answers 200; rejects with the worker's last output on exit or timeout. */
  waitReady(timeoutMs: number, cancelled?: () => boolean): Promise<void>;
  ping(timeoutMs?: number): Promise<PingState>;
  /** The tail of stdout+stderr, for 424 messages. */
  lastOutput(): string;
  /**
   * Resolves once the worker has exited, or after `ms` (false): a container's engine client ends a
   * little after the container, and its last output arrives with it.
   */
  exitedWithin(ms: number): Promise<boolean>;
  /** SIGTERM to the process group, SIGKILL after `graceMs`. Resolves once it has exited. */
  stop(graceMs: number): Promise<WorkerExit>;
  /** Calls `listener` once the worker exits (at once if it has); returns the call that unsubscribes it. */
  onExit(listener: (exit: WorkerExit) => void): () => void;
  /** How many `onExit` listeners are waiting (each running command holds one until it ends). */
  readonly exitListenerCount: number;
  /** Adds fields to its output's log lines from now on (a warm worker learns its session id). */
  tagLogs(fields: Record<string, unknown>): void;
  /** CPU and memory as its cgroup counts them; undefined when it runs in none (then read /proc). */
  usage(): CgroupUsage | undefined;
}

export class WorkerStartError extends Error {
  override name = 'WorkerStartError';
}

/** What starts workers cannot be reached now (a cluster's API server): nothing started, retry later. */
export class BackendUnavailableError extends WorkerStartError {
  override name = 'BackendUnavailableError';
}

const OUTPUT_TAIL_BYTES = 4096;

export interface SpawnWorkerOptions {
  id: string;
  /** Starts with a helper by absolute path (see isolate), or the container engine. */
  argv: string[];
  cwd: string;
  /** The worker's environment: handed over on ENV_FD, never given to the helpers in front of it. */
  env: Record<string, string>;
  /** The helpers' own environment (default HELPER_ENV; a container engine gets the runtime's). */
  helperEnv?: Readonly<Record<string, string>> | undefined;
  port: number;
  socketPath?: string | undefined;
  logger: Logger;
  /** Hears the raw output as it comes (stdout and stderr). */
  output?: ((text: string) => void) | undefined;
  /**
   * How readiness and health are probed: `GET /ping` (HTTP, A2A and AG-UI containers), or a TCP
   * connect to the port for MCP containers, whose contract has no `/ping`.
   */
  healthCheck?: 'ping' | 'connect';
  /**
   * Sandboxed start: the command reports its sandbox pid as JSON on fd 3 (bwrap --info-fd) and waits
   * on fd 4 (bwrap --block-fd) until `prepare(pid)` has set up what the sandbox needs from outside.
   * `prepare` returns a cleanup run when the worker exits.
   */
  prepare?: ((sandboxPid: number) => Promise<() => void>) | undefined;
  /** Names a resource limit the worker hit (memory, processes), added to its last output. */
  limitHit?: (() => string | undefined) | undefined;
  /** Reads the worker's cgroup figures (a sandboxed worker with cgroups). */
  usage?: (() => CgroupUsage | undefined) | undefined;
  /**
   * How to stop what the worker process stands for, when signalling its group is not enough (a
   * container engine's client: the container outlives it). Awaited before the group is signalled.
   */
  stopWith?: ((graceMs: number) => Promise<void>) | undefined;
}

/** The `child-pid` of bwrap's --info-fd JSON, once the object is complete. */
function parseSandboxPid(text: string): number | undefined {
  try {
    const pid = (JSON.parse(text) as { 'child-pid'?: unknown })['child-pid'];
    return typeof pid === 'number' ? pid : undefined;
  } catch {
    return undefined; // not complete yet
  }
}

/** What the parts of one worker share: its process, the tail of its output, and how it ended. */
interface WorkerState {
  readonly child: ChildProcess;
  readonly options: SpawnWorkerOptions;
  /** Logs its output; `tagLogs` adds fields to it. */
  logger: Logger;
  /** The tail of stdout+stderr and of what went wrong starting it, for error messages. */
  tail: string;
  /** Undoes what `prepare` set up for its sandbox; run when the worker exits. */
  cleanup: (() => void) | undefined;
  sandboxPid: number | undefined;
  /** The worker inside the sandbox (the child of its first process), once it answered. */
  sandboxedPid: number | undefined;
  exited: WorkerExit | undefined;
  readonly exitListeners: Set<(exit: WorkerExit) => void>;
}

/** Signals the worker's whole process group; nothing when the group is gone. */
function signalGroup(child: ChildProcess, sig: NodeJS.Signals): void {
  try {
    if (child.pid) process.kill(-child.pid, sig);
  } catch {
    /* already gone */
  }
}

/**
 * Resolves with the worker's exit (once): its process exited, or could not be spawned. Then its
 * sandbox is cleaned up, what it left in its group killed, and the `onExit` listeners told.
 */
function watchExit(state: WorkerState): Promise<WorkerExit> {
  return new Promise<WorkerExit>((resolve) => {
    const done = (exit: WorkerExit) => {
      if (state.exited) return;
      state.exited = exit;
      state.cleanup?.();
      // Kill anything the worker left behind in its group; ESRCH when nothing is left.
      signalGroup(state.child, 'SIGKILL');
      resolve(exit);
      for (const listener of state.exitListeners) listener(exit);
    };
    state.child.on('exit', (code, signal) => done({ code, signal }));
    state.child.on('error', (error) => {
      state.tail += `\n[spawn failed: ${error.message}]`;
      done({ code: null, signal: null });
    });
  });
}

/** Logs stdout and stderr line by line (a last line without a newline at the end) and keeps the tail. */
function logOutput(state: WorkerState): void {
  const { child, options } = state;
  const selfExporting = preloadsInstrument(options.env);
  const logLine = (line: string, stream: 'stdout' | 'stderr'): void => {
    const out = parseWorkerLine(line, stream);
    const exported = selfExporting && exportedByInstrument(out, stream);
    state.logger[out.level](out.msg, exported ? { ...out.fields, [EXPORTED_BY_AGENT]: true } : out.fields);
  };
  for (const stream of ['stdout', 'stderr'] as const) {
    let partial = '';
    child[stream]?.setEncoding('utf8');
    child[stream]?.on('data', (text: string) => {
      state.tail = (state.tail + text).slice(-OUTPUT_TAIL_BYTES);
      options.output?.(text);
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line) logLine(line, stream);
    });
    child[stream]?.on('end', () => partial && logLine(partial, stream));
  }
}

/**
 * A sandboxed start (see `SpawnWorkerOptions.prepare`): once bwrap reports the sandbox pid on fd 3,
 * `prepare` runs, then the sandbox goes on (fd 4); the worker is killed when `prepare` fails.
 */
function prepareSandbox(state: WorkerState, prepare: (sandboxPid: number) => Promise<() => void>): void {
  const info = state.child.stdio[3] as NodeJS.ReadableStream | null;
  const block = state.child.stdio[4] as NodeJS.WritableStream | null;
  let text = '';
  info?.setEncoding('utf8');
  info?.on('data', (chunk: string) => {
    if (state.sandboxPid !== undefined) return;
    text += chunk;
    const sandboxPid = parseSandboxPid(text);
    state.sandboxPid = sandboxPid;
    if (sandboxPid === undefined) return;
    prepare(sandboxPid).then(
      (done) => {
        if (state.exited) return done();
        state.cleanup = done;
        block?.write('go');
      },
      (error: unknown) => {
        state.tail += `\n[sandbox setup failed: ${(error as Error).message}]`;
        signalGroup(state.child, 'SIGKILL');
      },
    );
  });
  info?.on('error', () => undefined); // the pipe closes when bwrap execs the worker
  (block as unknown as { on?: (e: string, f: () => void) => void })?.on?.('error', () => undefined);
}

/** The keep-alive agent for requests to the worker, over its sandbox's socket when it has one. */
function workerAgent(socketPath: string | undefined): Agent {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity, keepAliveMsecs: 10_000 });
  if (socketPath) {
    // The bridge socket lives in a folder the sandbox could write to before it was sealed: connect
    // only to a real socket, never through a link it may have put there to reach another session.
    const connectTo = agent.createConnection.bind(agent);
    agent.createConnection = (opts, callback) => {
      if (!lstatSync(socketPath, { throwIfNoEntry: false })?.isSocket())
        throw new Error(`${socketPath} is not the worker's socket`);
      return connectTo(opts, callback);
    };
  }
  return agent;
}

/** Polls the worker's health until it answers; throws with its last output on exit or timeout. */
async function waitUntilReady(
  state: WorkerState,
  ping: (timeoutMs: number) => Promise<PingState>,
  timeoutMs: number,
  cancelled: () => boolean,
): Promise<void> {
  const { options } = state;
  const deadline = Date.now() + timeoutMs;
  let delayMs = 5;
  for (;;) {
    if (cancelled()) return;
    const { exited } = state;
    if (exited) {
      const how = exited.signal ? `signal ${exited.signal}` : `code ${exited.code}`;
      throw new WorkerStartError(
        `worker exited with ${how} before answering /ping. Last output:\n${state.tail.trim() || '(none)'}${options.limitHit?.() ? `\n[${options.limitHit()}]` : ''}`,
      );
    }
    const left = deadline - Date.now();
    if (left <= 0)
      throw new WorkerStartError(
        `Runtime initialization time exceeded: /ping did not answer within ${timeoutMs} ms. Last output:\n${state.tail.trim() || '(none)'}`,
      );
    try {
      await ping(Math.max(50, Math.min(1000, left)));
      // bwrap's own exit, and so the bridge's, comes a moment after the worker's: watch the worker.
      if (state.sandboxPid !== undefined) state.sandboxedPid = childrenOf(state.sandboxPid)[0];
      return;
    } catch {
      // Not listening yet: poll again after a short, growing delay.
      await new Promise((r) => setTimeout(r, Math.min(delayMs, Math.max(1, deadline - Date.now()))));
      delayMs = Math.min(delayMs * 2, 50);
    }
  }
}

/** Ends the worker: `stopWith` first when set, then SIGTERM to its group, SIGKILL after `graceMs`. */
async function stopWorker(
  state: WorkerState,
  agent: Agent,
  exitPromise: Promise<WorkerExit>,
  graceMs: number,
): Promise<WorkerExit> {
  agent.destroy();
  if (state.exited) return state.exited;
  await state.options.stopWith?.(graceMs).catch(() => undefined); // the group's signals follow anyway
  signalGroup(state.child, 'SIGTERM');
  const timer = setTimeout(() => signalGroup(state.child, 'SIGKILL'), graceMs);
  const exit = await exitPromise;
  clearTimeout(timer);
  return exit;
}

/** Whether the worker exits within `ms`: at once when it has. */
function exitedWithin(state: WorkerState, exitPromise: Promise<WorkerExit>, ms: number): Promise<boolean> {
  if (state.exited) return Promise.resolve(true);
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    void exitPromise.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/**
 * Starts one worker in its own process group (detached) so that stopping it reaches every process
 * it forked. Output is logged line by line through `logger` (tagged with the session by the caller)
 * and its tail kept for error messages. A worker exit is an event, never an exception.
 */
export function spawnWorker(options: SpawnWorkerOptions): Worker {
  const sandboxed = options.prepare !== undefined;
  const child: ChildProcess = spawnHelper(options.argv, {
    cwd: options.cwd,
    tenantEnv: options.env,
    helperEnv: options.helperEnv,
    stdio: sandboxed ? ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'],
  });
  const state: WorkerState = {
    child,
    options,
    logger: options.logger,
    tail: '',
    cleanup: undefined,
    sandboxPid: undefined,
    sandboxedPid: undefined,
    exited: undefined,
    exitListeners: new Set(),
  };
  const exitPromise = watchExit(state);
  logOutput(state);
  if (options.prepare) prepareSandbox(state, options.prepare);
  const agent = workerAgent(options.socketPath);
  return workerOf(state, agent, exitPromise, healthProbe(options, agent));
}

/** The `Worker` over a started worker's state. */
function workerOf(
  state: WorkerState,
  agent: Agent,
  exitPromise: Promise<WorkerExit>,
  ping: (timeoutMs?: number) => Promise<PingState>,
): Worker {
  const { child, options } = state;
  return {
    id: options.id,
    pid: child.pid ?? -1,
    port: options.port,
    socketPath: options.socketPath,
    get sandboxPid() {
      return state.sandboxPid;
    },
    ended: () =>
      state.exited !== undefined || (state.sandboxedPid !== undefined && !running(state.sandboxedPid)),
    usage: () => options.usage?.(),
    agent,
    get exited() {
      return state.exited;
    },
    waitReady: (timeoutMs, cancelled = () => false) => waitUntilReady(state, ping, timeoutMs, cancelled),
    ping,
    exitedWithin: (ms) => exitedWithin(state, exitPromise, ms),
    lastOutput: () => {
      const hit = options.limitHit?.();
      return [state.tail.trim(), hit ? `[${hit}]` : ''].filter(Boolean).join('\n');
    },
    stop: (graceMs) => stopWorker(state, agent, exitPromise, graceMs),
    tagLogs: (fields) => {
      state.logger = state.logger.child(fields);
    },
    onExit: (listener) => {
      if (state.exited) listener(state.exited);
      else state.exitListeners.add(listener);
      return () => state.exitListeners.delete(listener);
    },
    get exitListenerCount() {
      return state.exitListeners.size;
    },
  };
}

import { type ChildProcess } from 'node:child_process';
import { lstatSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { type Logger } from '../logger.js';
import { childrenOf, running } from '../telemetry/process-usage.js';
import { type CgroupUsage } from './cgroups.js';
import { spawnHelper } from './helpers.js';
import { preloadsInstrument } from './instrument-preload.js';
import { EXPORTED_BY_AGENT, exportedByInstrument, parseWorkerLine } from './worker-output.js';

/** What the last `/ping` said. `timeOfLastUpdateMs` is absent when the worker does not send it. */
export interface PingState {
  status: 'Healthy' | 'HealthyBusy' | 'Unknown';
  timeOfLastUpdateMs?: number;
}

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

function parseTimeOfLastUpdate(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value < 1e11 ? value * 1000 : value; // unix s or ms
  if (typeof value === 'string') {
    const ms = /^\d+(\.\d+)?$/.test(value) ? Number(value) * 1000 : Date.parse(value);
    return Number.isFinite(ms) ? ms : undefined;
  }
  return undefined;
}

/** `GET /ping` over `target`: what the worker says of its health (HTTP, A2A and AG-UI workers). */
export function pingOver(
  target: { socketPath: string } | { host: string; port: number },
  agent: Agent,
  timeoutMs: number,
): Promise<PingState> {
  return new Promise((resolve, reject) => {
    const req = request({ ...target, path: '/ping', method: 'GET', agent, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body = (body + c).slice(0, 4096)));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`/ping answered ${res.statusCode}`));
        let parsed: Record<string, unknown> = {};
        try {
          parsed = JSON.parse(body) as Record<string, unknown>;
        } catch {
          // A 200 with a non-JSON body still means the server is up; its status is unknown.
        }
        const status =
          parsed.status === 'Healthy' || parsed.status === 'HealthyBusy' ? parsed.status : 'Unknown';
        const t = parseTimeOfLastUpdate(parsed.time_of_last_update);
        resolve(t === undefined ? { status } : { status, timeOfLastUpdateMs: t });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`/ping timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

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

/** Resolves once something accepts a TCP connection on the loopback port. */
function probeConnect(port: number, timeoutMs: number): Promise<PingState> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, timeout: timeoutMs });
    socket.once('connect', () => {
      socket.destroy();
      resolve({ status: 'Healthy' });
    });
    socket.once('timeout', () => socket.destroy(new Error(`connect timed out after ${timeoutMs} ms`)));
    socket.once('error', reject);
  });
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

/**
 * Starts one worker in its own process group (detached) so that stopping it reaches every process
 * it forked. Output is logged line by line through `logger` (tagged with the session by the caller)
 * and its tail kept for error messages. A worker exit is an event, never an exception.
 */
export function spawnWorker(options: SpawnWorkerOptions): Worker {
  const { argv, port } = options;
  let logger = options.logger;
  const sandboxed = options.prepare !== undefined;
  const child: ChildProcess = spawnHelper(argv, {
    cwd: options.cwd,
    tenantEnv: options.env,
    helperEnv: options.helperEnv,
    stdio: sandboxed ? ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  let cleanup: (() => void) | undefined;
  let sandboxPid: number | undefined;
  /** The worker inside the sandbox (the child of its first process), once it answered. */
  let sandboxedPid: number | undefined;
  let exited: WorkerExit | undefined;
  const exitListeners = new Set<(exit: WorkerExit) => void>();
  const exitPromise = new Promise<WorkerExit>((resolve) => {
    const done = (exit: WorkerExit) => {
      if (exited) return;
      exited = exit;
      cleanup?.();
      // Kill anything the worker left behind in its group; ESRCH when nothing is left.
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* nothing left in the group */
      }
      resolve(exit);
      for (const listener of exitListeners) listener(exit);
    };
    child.on('exit', (code, signal) => done({ code, signal }));
    child.on('error', (error) => {
      tail += `\n[spawn failed: ${error.message}]`;
      done({ code: null, signal: null });
    });
  });
  const selfExporting = preloadsInstrument(options.env);
  const logLine = (line: string, stream: 'stdout' | 'stderr'): void => {
    const out = parseWorkerLine(line, stream);
    const exported = selfExporting && exportedByInstrument(out, stream);
    logger[out.level](out.msg, exported ? { ...out.fields, [EXPORTED_BY_AGENT]: true } : out.fields);
  };
  for (const stream of ['stdout', 'stderr'] as const) {
    let partial = '';
    child[stream]?.setEncoding('utf8');
    child[stream]?.on('data', (text: string) => {
      tail = (tail + text).slice(-OUTPUT_TAIL_BYTES);
      options.output?.(text);
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line) logLine(line, stream);
    });
    child[stream]?.on('end', () => partial && logLine(partial, stream));
  }
  if (sandboxed) {
    const info = child.stdio[3] as NodeJS.ReadableStream | null;
    const block = child.stdio[4] as NodeJS.WritableStream | null;
    let text = '';
    info?.setEncoding('utf8');
    info?.on('data', (chunk: string) => {
      if (sandboxPid !== undefined) return;
      text += chunk;
      sandboxPid = parseSandboxPid(text);
      if (sandboxPid === undefined) return;
      if (!options.prepare) return;
      options.prepare(sandboxPid).then(
        (done) => {
          if (exited) return done();
          cleanup = done;
          block?.write('go');
        },
        (error: unknown) => {
          tail += `\n[sandbox setup failed: ${(error as Error).message}]`;
          signal('SIGKILL');
        },
      );
    });
    info?.on('error', () => undefined); // the pipe closes when bwrap execs the worker
    (block as unknown as { on?: (e: string, f: () => void) => void })?.on?.('error', () => undefined);
  }
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity, keepAliveMsecs: 10_000 });
  const socketPath = options.socketPath;
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
  const target = options.socketPath ? { socketPath: options.socketPath } : { host: '127.0.0.1', port };

  const httpPing = (timeoutMs = 2000): Promise<PingState> => pingOver(target, agent, timeoutMs);

  // Through a sandbox's socket a connect always succeeds (its bridge listens): any HTTP answer from
  // the worker behind it, whatever the status, is what shows an MCP server is up.
  const answersHttp = (timeoutMs: number): Promise<PingState> =>
    new Promise((resolve, reject) => {
      const req = request({ ...target, path: '/ping', method: 'GET', agent, timeout: timeoutMs }, (res) => {
        res.resume();
        resolve({ status: 'Healthy' });
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end();
    });
  const ping = (timeoutMs = 2000): Promise<PingState> =>
    options.healthCheck !== 'connect'
      ? httpPing(timeoutMs)
      : socketPath
        ? answersHttp(timeoutMs)
        : probeConnect(port, timeoutMs);

  const waitReady = async (timeoutMs: number, cancelled: () => boolean = () => false): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    let delayMs = 5;
    for (;;) {
      if (cancelled()) return;
      if (exited) {
        const how = exited.signal ? `signal ${exited.signal}` : `code ${exited.code}`;
        throw new WorkerStartError(
          `worker exited with ${how} before answering /ping. Last output:\n${tail.trim() || '(none)'}${options.limitHit?.() ? `\n[${options.limitHit()}]` : ''}`,
        );
      }
      const left = deadline - Date.now();
      if (left <= 0)
        throw new WorkerStartError(
          `Runtime initialization time exceeded: /ping did not answer within ${timeoutMs} ms. Last output:\n${tail.trim() || '(none)'}`,
        );
      try {
        await ping(Math.max(50, Math.min(1000, left)));
        // bwrap's own exit, and so the bridge's, comes a moment after the worker's: watch the worker.
        if (sandboxPid !== undefined) sandboxedPid = childrenOf(sandboxPid)[0];
        return;
      } catch {
        // Not listening yet: poll again after a short, growing delay.
        await new Promise((r) => setTimeout(r, Math.min(delayMs, Math.max(1, deadline - Date.now()))));
        delayMs = Math.min(delayMs * 2, 50);
      }
    }
  };

  const signal = (sig: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, sig);
    } catch {
      /* already gone */
    }
  };

  return {
    id: options.id,
    pid: child.pid ?? -1,
    port,
    socketPath: options.socketPath,
    get sandboxPid() {
      return sandboxPid;
    },
    ended: () => exited !== undefined || (sandboxedPid !== undefined && !running(sandboxedPid)),
    usage: () => options.usage?.(),
    agent,
    get exited() {
      return exited;
    },
    waitReady,
    ping,
    exitedWithin: (ms) =>
      exited
        ? Promise.resolve(true)
        : new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => resolve(false), ms);
            void exitPromise.then(() => {
              clearTimeout(timer);
              resolve(true);
            });
          }),
    lastOutput: () => {
      const hit = options.limitHit?.();
      return [tail.trim(), hit ? `[${hit}]` : ''].filter(Boolean).join('\n');
    },
    stop: async (graceMs) => {
      agent.destroy();
      if (exited) return exited;
      await options.stopWith?.(graceMs).catch(() => undefined); // the group's signals follow anyway
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), graceMs);
      const exit = await exitPromise;
      clearTimeout(timer);
      return exit;
    },
    tagLogs: (fields) => {
      logger = logger.child(fields);
    },
    onExit: (listener) => {
      if (exited) listener(exited);
      else exitListeners.add(listener);
      return () => exitListeners.delete(listener);
    },
    get exitListenerCount() {
      return exitListeners.size;
    },
  };
}

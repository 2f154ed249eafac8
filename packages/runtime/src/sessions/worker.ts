import { type ChildProcess, spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { connect, createServer } from 'node:net';
import { type Logger } from '../logger.js';

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
  /** Keep-alive agent for requests to this worker. */
  readonly agent: Agent;
  readonly exited: WorkerExit | undefined;
  /** Resolves when `/ping` answers 200; rejects with the worker's last output on exit or timeout. */
  waitReady(timeoutMs: number, cancelled?: () => boolean): Promise<void>;
  ping(timeoutMs?: number): Promise<PingState>;
  /** The tail of stdout+stderr, for 424 messages. */
  lastOutput(): string;
  /** SIGTERM to the process group, SIGKILL after `graceMs`. Resolves once it has exited. */
  stop(graceMs: number): Promise<WorkerExit>;
  onExit(listener: (exit: WorkerExit) => void): void;
  /** Adds fields to its output's log lines from now on (a warm worker learns its session id). */
  tagLogs(fields: Record<string, unknown>): void;
}

export class WorkerStartError extends Error {
  override name = 'WorkerStartError';
}

const OUTPUT_TAIL_BYTES = 4096;

/** A free loopback port for a worker's `PORT` (bind 0, read, release). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

function parseTimeOfLastUpdate(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value < 1e11 ? value * 1000 : value; // unix s or ms
  if (typeof value === 'string') {
    const ms = /^\d+(\.\d+)?$/.test(value) ? Number(value) * 1000 : Date.parse(value);
    return Number.isFinite(ms) ? ms : undefined;
  }
  return undefined;
}

export interface SpawnWorkerOptions {
  id: string;
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  port: number;
  logger: Logger;
  /**
   * How readiness and health are probed: `GET /ping` (HTTP, A2A and AG-UI containers), or a TCP
   * connect to the port for MCP containers, whose contract has no `/ping`.
   */
  healthCheck?: 'ping' | 'connect';
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

/**
 * Starts one worker in its own process group (detached) so that stopping it reaches every process
 * it forked. Output is logged line by line through `logger` (tagged with the session by the caller)
 * and its tail kept for error messages. A worker exit is an event, never an exception.
 */
export function spawnWorker(options: SpawnWorkerOptions): Worker {
  const { argv, port } = options;
  let logger = options.logger;
  const child: ChildProcess = spawn(argv[0] as string, argv.slice(1), {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  let exited: WorkerExit | undefined;
  const exitListeners: ((exit: WorkerExit) => void)[] = [];
  const exitPromise = new Promise<WorkerExit>((resolve) => {
    const done = (exit: WorkerExit) => {
      if (exited) return;
      exited = exit;
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
  for (const stream of ['stdout', 'stderr'] as const) {
    let partial = '';
    child[stream]?.setEncoding('utf8');
    child[stream]?.on('data', (text: string) => {
      tail = (tail + text).slice(-OUTPUT_TAIL_BYTES);
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line) logger.info(line, { stream });
    });
    child[stream]?.on('end', () => partial && logger.info(partial, { stream }));
  }
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity, keepAliveMsecs: 10_000 });

  const httpPing = (timeoutMs = 2000): Promise<PingState> =>
    new Promise((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/ping', method: 'GET', agent, timeout: timeoutMs },
        (res) => {
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
        },
      );
      req.on('timeout', () => req.destroy(new Error(`/ping timed out after ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end();
    });

  const ping = (timeoutMs = 2000): Promise<PingState> =>
    options.healthCheck === 'connect' ? probeConnect(port, timeoutMs) : httpPing(timeoutMs);

  const waitReady = async (timeoutMs: number, cancelled: () => boolean = () => false): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    let delayMs = 5;
    for (;;) {
      if (cancelled()) return;
      if (exited) {
        const how = exited.signal ? `signal ${exited.signal}` : `code ${exited.code}`;
        throw new WorkerStartError(
          `worker exited with ${how} before answering /ping. Last output:\n${tail.trim() || '(none)'}`,
        );
      }
      const left = deadline - Date.now();
      if (left <= 0)
        throw new WorkerStartError(
          `Runtime initialization time exceeded: /ping did not answer within ${timeoutMs} ms. Last output:\n${tail.trim() || '(none)'}`,
        );
      try {
        await ping(Math.max(50, Math.min(1000, left)));
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
    agent,
    get exited() {
      return exited;
    },
    waitReady,
    ping,
    lastOutput: () => tail.trim(),
    stop: async (graceMs) => {
      agent.destroy();
      if (exited) return exited;
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
      else exitListeners.push(listener);
    },
  };
}

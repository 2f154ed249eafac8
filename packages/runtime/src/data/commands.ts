import { type ServerResponse } from 'node:http';
import { type Readable } from 'node:stream';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/core/serde';
import { validationError } from '../errors.js';
import { removeWhenEmpty } from '../sessions/cgroups.js';
import { type CommandRun, type CommandSpawn } from '../sessions/backend.js';
import { spawnHelper } from '../sessions/helpers.js';
import { type Session, type SessionManager } from '../sessions/session-manager.js';

/** The JSON body of InvokeAgentRuntimeCommand. */
export interface CommandRequest {
  command: string;
  timeoutS: number;
}

const MAX_COMMAND_CHARS = 65_536;
const DEFAULT_TIMEOUT_S = 300;
/** Largest payload of one event (AWS: 64 KB per event). */
const MAX_EVENT_CHARS = 32 * 1024;

/** Checks `{"command": string 1–65536, "timeout"?: integer 1–max}` and names the bad field. */
export function parseCommandRequest(body: Record<string, unknown>, maxTimeoutS: number): CommandRequest {
  const { command, timeout } = body;
  if (typeof command !== 'string' || command.length === 0)
    throw validationError('command', 'is required: a non-empty string');
  if (command.length > MAX_COMMAND_CHARS)
    throw validationError('command', `is ${command.length} characters; the limit is ${MAX_COMMAND_CHARS}`);
  if (
    timeout !== undefined &&
    (!Number.isInteger(timeout) || (timeout as number) < 1 || (timeout as number) > maxTimeoutS)
  )
    throw validationError('timeout', `must be an integer number of seconds from 1 to ${maxTimeoutS}`);
  return { command, timeoutS: (timeout as number | undefined) ?? DEFAULT_TIMEOUT_S };
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** One `chunk` event of `InvokeAgentRuntimeCommandStreamOutput`, framed as the SDK decodes it. */
export function chunkEvent(chunk: Record<string, unknown>): Uint8Array {
  return codec.encode({
    headers: {
      ':message-type': { type: 'string', value: 'event' },
      ':event-type': { type: 'string', value: 'chunk' },
      ':content-type': { type: 'string', value: 'application/json' },
    },
    body: fromUtf8(JSON.stringify(chunk)),
  });
}

/** A modelled exception in the middle of the stream; the SDK throws it while the caller iterates. */
export function exceptionEvent(type: string, message: string): Uint8Array {
  return codec.encode({
    headers: {
      ':message-type': { type: 'string', value: 'exception' },
      ':exception-type': { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
    },
    body: fromUtf8(JSON.stringify({ message })),
  });
}

const SIGNAL_NUMBERS: Partial<Record<NodeJS.Signals, number>> = { SIGKILL: 9, SIGTERM: 15, SIGINT: 2 };

/**
 * Runs one command as a fresh, non-interactive `bash -c` inside the session's sandbox (the same
 * isolation, working directory and environment as its worker) and streams it to `res` as the AWS
 * event stream: `contentStart`, `contentDelta` per stdout/stderr piece as it comes, `contentStop`
 * with the exit code and COMPLETED or TIMED_OUT (everything it started is SIGKILLed at the timeout:
 * exit code 137). It runs in its own cgroup inside the session's, so the session's memory, process
 * and CPU limits hold for it, and a `setsid` daemon it left behind ends with it. Its output is read
 * only as fast as the caller reads the stream. The command dies with the caller's connection and
 * with the session.
 */
export function runCommand(
  sessions: SessionManager,
  session: Session,
  request: CommandRequest,
  res: ServerResponse,
): Promise<void> {
  const spawn = sessions.commandSpawn(session, ['bash', '-c', request.command], request.timeoutS);
  const { cgroup } = spawn;
  return new Promise<void>((resolve) => {
    const command = start(spawn);
    const write = (frame: Uint8Array) => {
      if (!res.writableEnded && !res.destroyed) return res.write(frame);
      return true;
    };
    const killAll = () => {
      command.kill();
      cgroup?.killAll();
    };
    write(chunkEvent({ contentStart: {} }));
    streamOutput([command.stdout, command.stderr], res, write);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killAll();
    }, request.timeoutS * 1000);
    // The worker outlives many commands: each one's exit listener goes when the command ends.
    const stopWatchingWorker = session.worker?.onExit(() => killAll());
    res.on('close', () => {
      if (!res.writableFinished) killAll();
    });
    let finished = false;
    const end = (frame: Uint8Array) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      stopWatchingWorker?.();
      killAll(); // anything the command left running
      if (cgroup) removeWhenEmpty(cgroup);
      write(frame);
      res.end();
      resolve();
    };
    command.exitCode.then(
      (exitCode) =>
        end(chunkEvent({ contentStop: { exitCode, status: timedOut ? 'TIMED_OUT' : 'COMPLETED' } })),
      (error: unknown) =>
        end(exceptionEvent('runtimeClientError', `The command could not start: ${(error as Error).message}`)),
    );
  });
}

/**
 * The command running: by its backend (pods/exec), or as a helper process in its own process group,
 * whose every process `kill()` SIGKILLs.
 */
function start(spawn: CommandSpawn): CommandRun {
  if (spawn.run) return spawn.run();
  const child = spawnHelper(spawn.argv, {
    cwd: spawn.cwd,
    tenantEnv: spawn.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return {
    stdout: child.stdout!,
    stderr: child.stderr!,
    exitCode: new Promise((resolve, reject) => {
      child.on('error', reject);
      child.on('close', (code, signal) =>
        resolve(code ?? 128 + (signal ? (SIGNAL_NUMBERS[signal] ?? 1) : 1)),
      );
    }),
    kill() {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is already gone
      }
    },
  };
}

/**
 * Relays stdout and stderr as `contentDelta` events, whole characters per event. When the caller's
 * socket buffer is full, both pipes pause until it drains: the command then blocks on its own
 * writes instead of the runtime holding its output.
 */
function streamOutput(
  pipes: [Readable, Readable],
  res: ServerResponse,
  write: (frame: Uint8Array) => boolean,
): void {
  let waiting = false;
  const resume = () => {
    waiting = false;
    for (const pipe of pipes) pipe.resume();
  };
  for (const [stream, pipe] of [
    ['stdout', pipes[0]],
    ['stderr', pipes[1]],
  ] as const) {
    pipe.setEncoding('utf8');
    pipe.on('data', (text: string) => {
      let flowing = true;
      for (let i = 0; i < text.length; i += MAX_EVENT_CHARS)
        flowing =
          write(chunkEvent({ contentDelta: { [stream]: text.slice(i, i + MAX_EVENT_CHARS) } })) && flowing;
      if (flowing || waiting) return;
      waiting = true;
      for (const p of pipes) p.pause();
      res.once('drain', resume);
    });
  }
}

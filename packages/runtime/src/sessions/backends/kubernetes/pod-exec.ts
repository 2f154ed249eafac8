// InvokeAgentRuntimeCommand on a session pod: pods/exec over WebSocket (client-node's Exec) from
// the runtime itself, on its one KubeConfig, with no helper process per command (a node process
// loading client-node per command cost most of a command's time). A pod's process outlives a
// closed exec stream, so the command runs under the image's `timeout -s KILL` when it has one:
// at its timeout it and its process group are killed in the pod, not only its stream closed.
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';
import { type CommandRun } from '../../backend.js';

export interface PodExecOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  pod: string;
  container: string;
}

/** The exit code a pods/exec Status carries: 0, the NonZeroExitCode cause, else 1. */
export function exitCodeOf(status: V1Status): number {
  if (status.status === 'Success') return 0;
  const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
  return cause?.message ? Number(cause.message) : 1;
}

/**
 * `argv` with `timeout -s KILL <s>` before it where the image has `timeout` (coreutils, busybox):
 * the command gets a process group of its own and that group is SIGKILLed in the pod at the end.
 */
export function underTimeout(argv: string[], timeoutS: number | undefined): string[] {
  if (timeoutS === undefined) return argv;
  const wrap = 'if command -v timeout >/dev/null 2>&1; then exec timeout -s KILL "$0" "$@"; fi; exec "$@"';
  return ['sh', '-c', wrap, `${timeoutS}s`, ...argv];
}

/** The exec socket, as far as flow control goes (client-node's is a `ws` WebSocket). */
interface PausableSocket {
  pause(): void;
  resume(): void;
  close(): void;
}

/**
 * Output streams that hold the exec socket while the caller is not reading: client-node writes each
 * frame into them and ignores a full buffer, so a write past the high-water mark pauses the socket
 * (TCP then holds the API server, the kubelet and the command back) until both have drained.
 */
function backpressuredOutput(): {
  stdout: PassThrough;
  stderr: PassThrough;
  attach(ws: PausableSocket): void;
} {
  let socket: PausableSocket | undefined;
  let full = false;
  const streams = [new PassThrough(), new PassThrough()] as const;
  const resume = () => {
    if (!full || streams.some((s) => s.writableNeedDrain)) return;
    full = false;
    socket?.resume();
  };
  for (const stream of streams) {
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    stream.write = ((...args: unknown[]) => {
      const ok = write(...args);
      if (!ok && !full) {
        full = true;
        socket?.pause();
      }
      return ok;
    }) as typeof stream.write;
    stream.on('drain', resume);
  }
  return {
    stdout: streams[0],
    stderr: streams[1],
    attach(ws) {
      socket = ws;
      if (full) ws.pause();
    },
  };
}

/** Runs `argv` in the pod's container: its output as it comes, its exit code, `kill()` to end it. */
export function podExec(options: PodExecOptions, argv: string[]): CommandRun {
  const output = backpressuredOutput();
  const { stdout, stderr } = output;
  // Its code is told once the caller has read all of its output (both streams ended).
  const read = Promise.all([once(stdout, 'end'), once(stderr, 'end')]);
  read.catch(() => undefined); // a stream's error is the command's: its Status or close says it
  let socket: PausableSocket | undefined;
  let killed = false;
  const status = new Promise<number>((resolve, reject) => {
    new Exec(options.kubeConfig)
      .exec(options.namespace, options.pod, options.container, argv, stdout, stderr, null, false, (status) =>
        resolve(exitCodeOf(status)),
      )
      .then((ws) => {
        socket = ws;
        output.attach(ws);
        if (killed) ws.close();
        ws.on('close', () => {
          // No Status before the close: the stream was cut (or killed); SIGKILL's code.
          setImmediate(() => resolve(137));
        });
      }, reject);
  }).finally(() => {
    stdout.end();
    stderr.end();
  });
  return {
    stdout,
    stderr,
    exitCode: status.then(async (code) => {
      await read;
      return code;
    }),
    kill() {
      killed = true;
      // A paused socket would not read the answer to its close frame.
      socket?.resume();
      socket?.close();
    },
  };
}

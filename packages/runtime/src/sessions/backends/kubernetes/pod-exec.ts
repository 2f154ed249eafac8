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

/** Runs `argv` in the pod's container: its output as it comes, its exit code, `kill()` to end it. */
export function podExec(options: PodExecOptions, argv: string[]): CommandRun {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  // Its code is told once the caller has read all of its output (both streams ended).
  const read = Promise.all([once(stdout, 'end'), once(stderr, 'end')]);
  read.catch(() => undefined); // a stream's error is the command's: its Status or close says it
  let socket: { close(): void } | undefined;
  let killed = false;
  const status = new Promise<number>((resolve, reject) => {
    new Exec(options.kubeConfig)
      .exec(options.namespace, options.pod, options.container, argv, stdout, stderr, null, false, (status) =>
        resolve(exitCodeOf(status)),
      )
      .then((ws) => {
        socket = ws;
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
      socket?.close();
    },
  };
}

// pods/exec over WebSocket, as kube-apiserver serves it to kubectl and client-node: the
// `v4.channel.k8s.io` / `v5.channel.k8s.io` framing, one byte of channel before each message
// (0 stdin, 1 stdout, 2 stderr, 3 error: the final Status, 4 resize, 255 close in v5).
import { PassThrough, Writable } from 'node:stream';
import { type WebSocket } from 'ws';
import { KubeError } from './objects.js';
import { type ExecOptions } from './pod-runtime.js';

export const EXEC_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];

function channelWriter(socket: WebSocket, channel: number): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (socket.readyState !== socket.OPEN) return done();
      socket.send(Buffer.concat([Buffer.from([channel]), chunk]), done);
    },
  });
}

/** The exit Status on channel 3: Success, or NonZeroExitCode with the code as its cause. */
function exitStatus(code: number): Record<string, unknown> {
  if (code === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command, exit code ${code}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
  };
}

/** Wires a connected exec WebSocket to `run`; the socket closes after the final Status. */
export function serveExec(
  socket: WebSocket,
  options: { command: string[]; container: string | undefined; stdin: boolean },
  run: (options: ExecOptions) => Promise<number>,
): void {
  const stdin = options.stdin ? new PassThrough() : undefined;
  socket.on('message', (data: Buffer) => {
    if (data[0] === 0) stdin?.write(data.subarray(1));
    if (data[0] === 255 && data[1] === 0) stdin?.end();
  });
  socket.on('close', () => stdin?.end());
  const finish = (status: Record<string, unknown>) => {
    if (socket.readyState === socket.OPEN)
      socket.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify(status))]));
    socket.close(1000);
  };
  run({
    command: options.command,
    container: options.container,
    stdin,
    stdout: channelWriter(socket, 1),
    stderr: channelWriter(socket, 2),
  })
    .then((code) => finish(exitStatus(code)))
    .catch((error: unknown) =>
      finish(
        error instanceof KubeError
          ? error.status()
          : { metadata: {}, status: 'Failure', message: (error as Error).message, reason: 'InternalError' },
      ),
    );
}

import { type Readable, type Writable } from 'node:stream';

/**
 * Copies a worker's answer to the caller chunk by chunk (SSE frames go out as they come) while
 * honouring back-pressure: when the caller reads slower than the worker writes, the worker's stream
 * is paused until the caller drains, so the runtime holds at most about one socket buffer per
 * caller instead of the whole answer. Calls `onEnd` once the answer is complete.
 */
export function relayBody(from: Readable, to: Writable, onEnd: () => void): void {
  from.on('data', (chunk: Buffer) => {
    if (!to.write(chunk)) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  });
  from.on('end', () => {
    to.end();
    onEnd();
  });
}

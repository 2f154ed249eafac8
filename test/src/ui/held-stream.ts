/**
 * An HTTP proxy in front of a server that holds one streamed response half-way: after the first
 * `bytes` bytes of a response whose path matches `held`, the rest waits for release(). A browser test
 * then sees a stream half-arrived whatever the machine's speed (a fast or loaded machine could
 * otherwise have read the whole stream before the test looked).
 */
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HeldStreamProxy {
  url: string;
  /** Lets the held responses (and any later one) go on. */
  release(): void;
  close(): Promise<void>;
}

export async function holdStream(target: string, held: RegExp, bytes: number): Promise<HeldStreamProxy> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const server = createServer((req, res) => {
    const upstream = request(
      new URL(req.url!, target),
      { method: req.method, headers: req.headers },
      (from) => {
        res.writeHead(from.statusCode!, from.headers);
        if (!held.test(req.url!)) return void from.pipe(res);
        void copyHeld(from, res, bytes, released).catch(() => res.destroy());
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    release,
    close: async () => {
      release();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

async function copyHeld(
  from: AsyncIterable<Buffer>,
  to: NodeJS.WritableStream,
  bytes: number,
  released: Promise<void>,
): Promise<void> {
  let sent = 0;
  for await (const chunk of from) {
    if (sent >= bytes) await released;
    sent += chunk.length;
    if (!to.write(chunk)) await once(to, 'drain');
  }
  to.end();
}

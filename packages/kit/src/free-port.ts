import { createServer } from 'node:net';

/**
 * A TCP port on `host` that was free a moment ago: the kernel's pick for a listen on port 0, closed
 * again before it resolves. For a child process or server that must be told its port up front;
 * another process may take it in between, so a caller that can listen on 0 itself should.
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address !== null
          ? resolve(address.port)
          : reject(new Error(`no port on ${host}`)),
      );
    });
  });
}

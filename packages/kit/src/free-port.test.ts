import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from './free-port.js';

describe('freePort', () => {
  it('gives a port another server can listen on at once', async () => {
    const port = await freePort();
    expect(port).toBeGreaterThan(0);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    expect((server.address() as { port: number }).port).toBe(port);
    await new Promise((resolve) => server.close(resolve));
  });

  it('fails for a host it cannot listen on', async () => {
    await expect(freePort('192.0.2.1')).rejects.toThrow(/EADDRNOTAVAIL/);
  });
});

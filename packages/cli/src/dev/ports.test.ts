import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { findFreePort, findPortOwner, isPortFree } from './ports.js';

describe('ports', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  async function listen(): Promise<number> {
    server = createServer();
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return (server.address() as { port: number }).port;
  }

  it('tells a free port from one in use', async () => {
    const port = await listen();
    expect(await isPortFree('127.0.0.1', port)).toBe(false);
    const free = await findFreePort();
    expect(await isPortFree('127.0.0.1', free)).toBe(true);
  });

  it.runIf(process.platform === 'linux')('names the process listening on a port', async () => {
    const port = await listen();
    const owner = await findPortOwner(port);
    expect(owner?.pid).toBe(process.pid);
    expect(owner?.command).toContain('node');
    expect(await findPortOwner(await findFreePort())).toBeUndefined();
  });
});

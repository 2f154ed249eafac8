import { readdir, readFile, readlink } from 'node:fs/promises';
import { createServer } from 'node:net';

/** Whether `host:port` can be listened on right now. */
export function isPortFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port the OS says is free now (listen on 0, read it, close). */
export function findFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host, port: 0 }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** The process listening on a TCP port, when the OS lets us see it (Linux /proc; our own user's processes). */
export interface PortOwner {
  pid: number;
  command: string;
}

async function listeningInodes(port: number): Promise<Set<string>> {
  const inodes = new Set<string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(file, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      const local = cols[1];
      // state 0A = LISTEN
      if (!local || cols[3] !== '0A') continue;
      if (Number.parseInt(local.split(':')[1] ?? '', 16) === port && cols[9]) inodes.add(cols[9]);
    }
  }
  return inodes;
}

export async function findPortOwner(port: number): Promise<PortOwner | undefined> {
  const inodes = await listeningInodes(port);
  if (inodes.size === 0) return undefined;
  const pids = (await readdir('/proc').catch(() => [] as string[])).filter((d) => /^\d+$/.test(d));
  for (const pid of pids) {
    const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
    for (const fd of fds) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode && inodes.has(inode)) {
        const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
        return { pid: Number(pid), command: cmdline.split('\0').filter(Boolean).join(' ') };
      }
    }
  }
  return undefined;
}

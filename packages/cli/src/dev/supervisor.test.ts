import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSupervisor, ServiceStartError, type ServiceSpec, type Supervisor } from './supervisor.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A fixture service: prints a line per event; `ready` flips once it printed READY <pid>. */
function spec(name: string, program: string, readyTimeoutMs = 20_000): ServiceSpec & { lines: string[] } {
  const lines: string[] = [];
  return {
    name,
    command: process.execPath,
    args: ['-e', program],
    env: { ...process.env, NODE_OPTIONS: '' },
    readyTimeoutMs,
    lines,
    ready: async () => lines.some((l) => l.startsWith('READY')),
  };
}

describe('createSupervisor', () => {
  let dir: string;
  let supervisor: Supervisor | undefined;
  const lines = new Map<string, string[]>();

  async function make(options: Partial<Parameters<typeof createSupervisor>[0]> = {}) {
    dir = await mkdtemp(join(tmpdir(), 'agentrt-supervisor-'));
    supervisor = createSupervisor({
      logDir: dir,
      stopGraceMs: 1_000,
      onLine: (name, line) => lines.get(name)?.push(line),
      ...options,
    });
    return supervisor;
  }

  function withLines<T extends ServiceSpec & { lines: string[] }>(s: T): T {
    lines.set(s.name, s.lines);
    return s;
  }

  afterEach(async () => {
    await supervisor?.stopAll();
    supervisor = undefined;
    lines.clear();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('waits for readiness, logs output to a file, and stops the whole process group', async () => {
    const s = await make();
    // The service forks a grandchild that ignores SIGTERM (like a stuck worker): only SIGKILL of the
    // group ends it, and stopAll must leave nothing behind.
    const program = `
      const { spawn } = require('node:child_process');
      const child = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => {}); console.log('GRANDCHILD ' + process.pid); setInterval(() => {}, 1000)"], { stdio: 'inherit' });
      setTimeout(() => console.log('READY ' + process.pid), 200);
      process.on('SIGTERM', () => { console.log('leader got SIGTERM'); process.exit(0); });
      setInterval(() => {}, 1000);`;
    const started = await s.start(withLines(spec('svc', program)));
    expect(alive(started.pid)).toBe(true);
    const all = lines.get('svc')!;
    await expect.poll(() => all.find((l) => l.startsWith('GRANDCHILD')), { timeout: 10_000 }).toBeDefined();
    const grandchild = Number(all.find((l) => l.startsWith('GRANDCHILD'))!.split(' ')[1]);
    expect(alive(grandchild)).toBe(true);

    const before = Date.now();
    await s.stopAll();
    expect(alive(started.pid)).toBe(false);
    expect(alive(grandchild)).toBe(false);
    expect(Date.now() - before).toBeGreaterThanOrEqual(900); // it waited the grace period for the stuck one
    const log = await readFile(started.logFile, 'utf8');
    expect(log).toContain('READY');
    expect(log).toContain('leader got SIGTERM');
  });

  it('reports a service that exits while starting, with its last output', async () => {
    const s = await make();
    const error = await s
      .start(spec('broken', `console.error('cannot bind: EADDRINUSE 127.0.0.1:4318'); process.exit(3)`))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceStartError);
    expect((error as ServiceStartError).message).toBe('broken exited with code 3 while starting');
    expect((error as ServiceStartError).tail).toContain('EADDRINUSE 127.0.0.1:4318');
  });

  it('gives up on a service that never becomes ready, and kills it on stop', async () => {
    const s = await make();
    const error = await s.start(spec('slow', 'setInterval(() => {}, 1000)', 300)).catch((e: unknown) => e);
    expect((error as Error).message).toBe('slow was not ready after 0 s');
    const pid = s.services[0]!.pid;
    expect(alive(pid)).toBe(true);
    await s.stopAll();
    expect(alive(pid)).toBe(false);
  });

  it('tells when a started service dies on its own', async () => {
    const exits: { name: string; code: number | null }[] = [];
    const s = await make({ onUnexpectedExit: (name, code) => exits.push({ name, code }) });
    await s.start(withLines(spec('flaky', `console.log('READY'); setTimeout(() => process.exit(7), 300)`)));
    await expect.poll(() => exits, { timeout: 10_000 }).toEqual([{ name: 'flaky', code: 7 }]);
  });

  it('does not report services it stops itself', async () => {
    const exits: string[] = [];
    const s = await make({ onUnexpectedExit: (name) => exits.push(name) });
    await s.start(withLines(spec('a', `console.log('READY'); setInterval(() => {}, 1000)`)));
    await s.start(withLines(spec('b', `console.log('READY'); setInterval(() => {}, 1000)`)));
    await s.stopAll();
    expect(exits).toEqual([]);
    expect(s.services.map((x) => alive(x.pid))).toEqual([false, false]);
  });

  it('stops the others together, and the stopLast ones after them', async () => {
    // A grace long enough that a loaded machine does not SIGKILL a service before it prints EXIT.
    const s = await make({ stopGraceMs: 15_000 });
    const slow = `console.log('READY'); process.on('SIGTERM', () => { console.log('GOT ' + Date.now()); setTimeout(() => { console.log('EXIT ' + Date.now()); process.exit(0); }, 400); }); setInterval(() => {}, 1000)`;
    const last = `console.log('READY'); process.on('SIGTERM', () => { console.log('TERM ' + Date.now()); process.exit(0); }); setInterval(() => {}, 1000)`;
    const collector = await s.start(withLines({ ...spec('collector', last), stopLast: true }));
    const a = await s.start(withLines(spec('a', slow)));
    const b = await s.start(withLines(spec('b', slow)));
    await s.stopAll();
    const stamp = async (file: string, word: string) =>
      Number(
        /(\d+)$/m.exec((await readFile(file, 'utf8')).split('\n').find((l) => l.startsWith(word)) ?? '')?.[1],
      );
    // a and b stopped in parallel: each was told before the other had exited.
    expect(await stamp(a.logFile, 'GOT')).toBeLessThan(await stamp(b.logFile, 'EXIT'));
    expect(await stamp(b.logFile, 'GOT')).toBeLessThan(await stamp(a.logFile, 'EXIT'));
    const collectorTerm = await stamp(collector.logFile, 'TERM');
    expect(collectorTerm).toBeGreaterThanOrEqual(await stamp(a.logFile, 'EXIT'));
    expect(collectorTerm).toBeGreaterThanOrEqual(await stamp(b.logFile, 'EXIT'));
  });

  it('fails clearly when the program cannot be spawned', async () => {
    const s = await make();
    const error = await s
      .start({ ...spec('ghost', ''), command: join(tmpdir(), 'no-such-program-agentrt') })
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/^ghost could not be started: spawn .*ENOENT/);
  });
});

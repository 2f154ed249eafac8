// Leader election on a coordination.k8s.io/v1 Lease of the test API server: one leader at a time,
// handover on release, takeover after a holder is killed (a real process, kill -9), none while the
// API server is unreachable. The Lease is read back with kubectl.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../logger.js';
import { type KubeApiServer, startKubeApiServer } from '../test-support/k8s/api-server.js';
import { writeKubeconfig } from '../test-support/k8s/kubeconfig.js';
import { type LeaderElection, createLeaderElection } from './leader-lease.js';

const run = promisify(execFile);
const RUNTIME_DIR = resolve(fileURLToPath(import.meta.url), '../../..');
/** Short, so the test waits seconds, not the 15 s default; the ratios are the defaults'. */
const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryMs: 200 };

let api: KubeApiServer;
let kubeconfig: string;
let kubeConfig: KubeConfig;
let namespaces = 0;
const elections: LeaderElection[] = [];
const children: ChildProcess[] = [];
const logger = createLogger({ level: 'error', sink: () => undefined });

beforeAll(async () => {
  api = await startKubeApiServer();
  kubeconfig = writeKubeconfig(api.url);
  kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfig);
});
afterEach(async () => {
  await Promise.all(elections.splice(0).map((e) => e.close()));
  for (const child of children.splice(0)) child.kill('SIGKILL');
});
afterAll(async () => {
  await api?.close();
});

async function namespace(): Promise<string> {
  const name = `lease-${++namespaces}`;
  await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

function candidate(ns: string, identity: string): LeaderElection & { starts: number; stops: number } {
  const election = createLeaderElection({ kubeConfig, namespace: ns, identity, logger, ...TIMING });
  const counted = Object.assign(election, { starts: 0, stops: 0 });
  election.whileLeading({ start: () => counted.starts++, stop: () => counted.stops++ });
  elections.push(election);
  return counted;
}

async function until(check: () => boolean, ms: number): Promise<number> {
  const started = Date.now();
  for (; !check(); await new Promise((r) => setTimeout(r, 20)))
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`);
  return Date.now() - started;
}

async function holderOf(ns: string): Promise<{ holderIdentity: string; leaseTransitions?: number }> {
  const { stdout } = await run('kubectl', ['-n', ns, 'get', 'lease', 'agentrt-leader', '-o', 'json'], {
    env: { ...process.env, KUBECONFIG: kubeconfig },
  });
  return (JSON.parse(stdout) as { spec: { holderIdentity: string; leaseTransitions?: number } }).spec;
}

/** Watches `elections` for `ms` and returns the most that led at one moment. */
async function mostLeadersAtOnce(group: LeaderElection[], ms: number): Promise<number> {
  let most = 0;
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 10)))
    most = Math.max(most, group.filter((e) => e.isLeader()).length);
  return most;
}

describe('leader election on a Lease', () => {
  it('three candidates: exactly one leads, and kubectl names it', async () => {
    const ns = await namespace();
    const group = ['r1', 'r2', 'r3'].map((id) => candidate(ns, id));
    await until(() => group.some((e) => e.isLeader()), 5000);
    expect(await mostLeadersAtOnce(group, 1500)).toBe(1);
    const leader = group.find((e) => e.isLeader())!;
    expect((await holderOf(ns)).holderIdentity).toBe(leader.identity);
    expect(leader.starts).toBe(1);
  });

  it('a leader that closes releases the Lease: another leads within a retry, not a lease duration', async () => {
    const ns = await namespace();
    const first = candidate(ns, 'first');
    await until(() => first.isLeader(), 5000);
    const second = candidate(ns, 'second');
    await new Promise((r) => setTimeout(r, 500));
    expect(second.isLeader()).toBe(false);
    await first.close();
    expect(first.stops).toBe(1);
    const took = await until(() => second.isLeader(), 5000);
    expect(took).toBeLessThan(TIMING.leaseDurationMs);
    expect(await holderOf(ns)).toMatchObject({ holderIdentity: 'second', leaseTransitions: 1 });
  });

  it('a leader closing while it renews still releases the Lease (the renewal lands first)', async () => {
    const ns = await namespace();
    // Renewing every millisecond: a renewal is in flight whenever close() is called.
    const busy = createLeaderElection({
      kubeConfig,
      namespace: ns,
      identity: 'busy',
      logger,
      ...TIMING,
      retryMs: 1,
    });
    await until(() => busy.isLeader(), 5000);
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    await busy.close();
    expect((await holderOf(ns)).holderIdentity).toBe('');
  });

  it('a holder killed with SIGKILL is replaced after the lease duration, never before', async () => {
    const ns = await namespace();
    // The holder is a real process running the built election (dist), killed without a chance to release.
    const script = `
      import { KubeConfig } from '@kubernetes/client-node';
      import { createLeaderElection } from './dist/control/leader-lease.js';
      import { createLogger } from './dist/logger.js';
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(process.env.KUBECONFIG);
      const e = createLeaderElection({ kubeConfig, namespace: '${ns}', identity: 'doomed',
        logger: createLogger({ level: 'error', sink: () => {} }), ...${JSON.stringify(TIMING)} });
      setInterval(() => { if (e.isLeader()) process.stdout.write('leading\\n'); }, 50);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: RUNTIME_DIR,
      env: { ...process.env, KUBECONFIG: kubeconfig },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let childLeads = false;
    child.stdout!.on('data', () => (childLeads = true));
    await until(() => childLeads, 10_000);
    const waiting = candidate(ns, 'survivor');
    await new Promise((r) => setTimeout(r, 600));
    expect(waiting.isLeader()).toBe(false); // the holder renews
    child.kill('SIGKILL');
    const killedAt = Date.now();
    await until(() => waiting.isLeader(), 15_000);
    const after = Date.now() - killedAt;
    expect(after).toBeGreaterThanOrEqual(TIMING.leaseDurationMs - TIMING.retryMs * 2);
    expect(after).toBeLessThan(TIMING.leaseDurationMs + 5000); // headroom for a loaded machine
    expect(await holderOf(ns)).toMatchObject({ holderIdentity: 'survivor', leaseTransitions: 1 });
  });

  it('a leader that cannot reach the API server stops leading within its renew deadline, and leads again after', async () => {
    const ns = await namespace();
    const only = candidate(ns, 'alone');
    await until(() => only.isLeader(), 5000);
    await api.suspend();
    try {
      const lost = await until(() => !only.isLeader(), 10_000);
      expect(lost).toBeLessThanOrEqual(TIMING.renewDeadlineMs + 2000);
      expect(only.stops).toBe(1);
    } finally {
      await api.resume();
    }
    await until(() => only.isLeader(), 5000);
    expect(only.starts).toBe(2);
  });

  it('candidates starting together over a shared Lease never lead two at once, through churn', async () => {
    const ns = await namespace();
    const group = ['c1', 'c2', 'c3', 'c4'].map((id) => candidate(ns, id));
    let most = await mostLeadersAtOnce(group, 1000);
    for (let round = 0; round < 3; round++) {
      const leader = group.find((e) => e.isLeader());
      if (leader) await leader.close();
      most = Math.max(most, await mostLeadersAtOnce(group, 700));
    }
    expect(most).toBe(1);
  });
});

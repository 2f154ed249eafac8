// The session-backend contract: what the session manager relies on from every backend, run against
// each one this machine can run (process-group always; bwrap where bubblewrap works; docker where a
// Docker engine answers). Real workers (the runtime's test fixtures), real processes, no fakes.
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../config.js';
import { createLogger } from '../../logger.js';
import { fixtureUri } from '../../test-support.js';
import { resolveArtifact } from '../artifact.js';
import { type SessionBackend, type SessionTarget, type StartedWorker } from '../backend.js';
import { spawnHelper } from '../helpers.js';
import { type Isolation, detectIsolation } from '../isolation.js';
import { type Worker } from '../worker.js';
import { createBwrapBackend } from './bwrap.js';
import { createProcessGroupBackend } from './process-group.js';

const root = mkdtempSync(join(os.tmpdir(), 'agentrt-backend-'));
chmodSync(root, 0o755);
const config = resolveRuntimeConfig({ dataDir: join(root, 'data') }, {});
const logger = createLogger({ level: 'error', sink: () => undefined });

/** The sandbox when this machine has one (root: bwrap or nothing; else bwrap or process-group). */
const sandbox: Isolation | undefined = (() => {
  try {
    const found = detectIsolation({ setting: 'auto', sandboxIds: { uid: 65534, gid: 65534 } });
    return found.mode === 'bwrap' ? { ...found, network: 'allowlist-only' } : undefined;
  } catch {
    return undefined; // root without a sandbox: the runtime refuses to start there
  }
})();
const processGroup: Isolation = {
  mode: 'process-group',
  network: 'shared',
  reason: 'contract test',
  off: [],
  pdeathsig: false,
  hostIds: undefined,
  cgroups: undefined,
};

const backends: { name: string; backend: SessionBackend }[] = [
  { name: 'process-group', backend: createProcessGroupBackend(processGroup) },
  ...(sandbox
    ? [
        {
          name: 'bwrap',
          backend: createBwrapBackend({ config, isolation: sandbox, instrumentPath: () => undefined }),
        },
      ]
    : []),
];
if (!sandbox) console.warn('backend contract: bwrap is not usable here; only the process-group backend runs');

afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * A fixture copied where the sandbox user can read it (a checkout may sit under a 0700 folder);
 * `failing` is an agent that writes a line and exits before it listens.
 */
function artifact(fixture: string): string {
  const dir = join(root, 'artifacts', `${fixture}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(join(dir, '..'), { recursive: true, mode: 0o755 });
  if (fixture === 'failing') {
    mkdirSync(dir);
    const command = ['node', '-e', "console.error('boom before listening'); process.exit(3)"];
    writeFileSync(join(dir, 'agentrt.json'), JSON.stringify({ command }));
  } else cpSync(fileURLToPath(fixtureUri(fixture)), dir, { recursive: true });
  chmodSync(dir, 0o755);
  return dir;
}

function target(dir: string, environmentVariables: Record<string, string>): SessionTarget {
  const arn = 'arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/contract-0123456789';
  return {
    runtime: { id: 'contract-0123456789', arn, name: 'contract' },
    version: {
      version: 1,
      config: {
        agentRuntimeArtifact: { containerConfiguration: { containerUri: `file://${dir}` } },
        environmentVariables,
      },
    },
  } as unknown as SessionTarget;
}

let started: StartedWorker[] = [];
afterAll(() => Promise.all(started.map((s) => s.worker.stop(0))));

async function start(backend: SessionBackend, fixture: string, env: Record<string, string> = {}) {
  const dir = artifact(fixture);
  const id = `w${Math.random().toString(36).slice(2, 10)}`;
  const sessionDir = join(config.dataDir, 'sessions', id);
  mkdirSync(join(sessionDir, 'tmp'), { recursive: true, mode: 0o700 });
  mkdirSync(join(sessionDir, 'home'), { recursive: true });
  const one = await backend.start({
    id,
    target: target(dir, env),
    launch: await resolveArtifact(`file://${dir}`),
    sessionDir,
    sessionId: 'contract-session-00000000000000000001',
    servedSession: () => 'contract-session-00000000000000000001',
    healthCheck: 'ping',
    logger,
    env: (port) => ({
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      PORT: String(port),
      HOME: join(sessionDir, 'home'),
      TMPDIR: join(sessionDir, 'tmp'),
      ...env,
    }),
  });
  started.push(one);
  return one;
}

/** POSTs `body` to the worker the way the data plane does: its agent, its socket or its port. */
function invoke(worker: Worker, body: string): Promise<{ status: number; text: string }> {
  const to = worker.socketPath ? { socketPath: worker.socketPath } : { host: '127.0.0.1', port: worker.port };
  return new Promise((resolve, reject) => {
    const req = request({ ...to, path: '/invocations', method: 'POST', agent: worker.agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Runs a command through the backend's exec, as InvokeAgentRuntimeCommand does. */
function run(one: StartedWorker, script: string): Promise<{ code: number | null; stdout: string }> {
  const spawn = one.exec(['/bin/sh', '-c', script]);
  const child = spawnHelper(spawn.argv, {
    cwd: spawn.cwd,
    tenantEnv: spawn.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout })));
}

describe.each(backends)('session backend contract: $name', ({ backend }) => {
  it('starts a worker that answers /ping and invocations through the transport it names', async () => {
    const one = await start(backend, 'echo');
    await one.worker.waitReady(20_000);
    one.seal?.();
    expect((await one.worker.ping()).status).toBe('Healthy');
    expect(await invoke(one.worker, '{"hello":"contract"}')).toEqual({
      status: 200,
      text: '{"hello":"contract"}',
    });
    expect(one.worker.exited).toBeUndefined();
  });

  it("runs a command beside the worker with its environment and working directory, not the runtime's", async () => {
    const one = await start(backend, 'echo', { CONTRACT_SECRET: "it's here" });
    await one.worker.waitReady(20_000);
    const out = await run(one, 'echo "$CONTRACT_SECRET|$PWD|${AGENTRT_DATA_DIR:-unset}"');
    expect(out.code).toBe(0);
    const [secret, cwd, leaked] = out.stdout.trim().split('|');
    expect(secret).toBe("it's here");
    expect(cwd).toMatch(/echo-/);
    expect(leaked).toBe('unset');
  });

  it('stops the worker with SIGTERM, tells its exit listeners once, and reports usage while it ran', async () => {
    const one = await start(backend, 'echo');
    await one.worker.waitReady(20_000);
    const usage = one.worker.usage();
    if (usage) expect(usage.memoryBytes).toBeGreaterThan(0);
    const heard: unknown[] = [];
    one.worker.onExit((exit) => heard.push(exit));
    const exit = await one.worker.stop(2000);
    expect(exit.signal ?? exit.code).not.toBeUndefined();
    expect(heard).toEqual([exit]);
    expect(one.worker.exited).toEqual(exit);
  });

  it('reports a worker that dies before it is ready with its last output', async () => {
    const one = await start(backend, 'failing');
    await expect(one.worker.waitReady(20_000)).rejects.toThrow(/exited with code 3.*boom before listening/s);
    started = started.filter((s) => s !== one);
  });
});

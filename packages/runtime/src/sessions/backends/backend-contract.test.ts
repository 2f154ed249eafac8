// The session-backend contract: what the session manager relies on from every backend, run against
// each one this machine can run (process-group always; bwrap where bubblewrap works; docker where a
// Docker engine answers). Real workers (the runtime's test fixtures), real processes, no fakes.
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { resolveRuntimeConfig } from '../../config.js';
import { createLogger } from '../../logger.js';
import { fixtureUri } from '../../test-support.js';
import { type LaunchSpec, launchOf } from '../artifact.js';
import { type SessionBackend, type SessionTarget, type StartedWorker } from '../backend.js';
import { helperPath, spawnHelper } from '../helpers.js';
import { type Isolation, detectIsolation } from '../isolation.js';
import { type Worker } from '../worker.js';
import { createBwrapBackend } from './bwrap.js';
import { createPodmanBackend } from './podman.js';
import { createProcessGroupBackend } from './process-group.js';
import { podmanImages } from '../../test-support/podman-images.js';

// A podman case builds its fixture image first, one build at a time across test files
// (test-support/podman-images.ts): CI timed one out at 30 s waiting behind others on loaded cores.
vi.setConfig({ testTimeout: 120_000 });

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

/** Builds the fixture into an image FROM the local Node base image (scripts/build-node-image.sh). */
function imageOf(dir: string): string {
  const tag = `localhost/agentrt-contract/${basename(dir).toLowerCase()}:1`;
  const { command } = JSON.parse(readFileSync(join(dir, 'agentrt.json'), 'utf8')) as { command: string[] };
  writeFileSync(
    join(dir, 'Containerfile'),
    `FROM ${BASE_IMAGE}\nCOPY . /app\nCMD ${JSON.stringify(command)}\n`,
  );
  const built = podmanImages(helperPath('podman')!, ['build', '-q', '-t', tag, dir]);
  if (built.status !== 0) throw new Error(`podman build: ${built.stderr}`);
  images.push(tag);
  return tag;
}

const BASE_IMAGE = 'localhost/agentrt/node:24';
/** The fixture images built here, removed once the suite is done. */
const images: string[] = [];
afterAll(() => {
  if (images.length > 0) podmanImages(helperPath('podman')!, ['rmi', '-f', ...images]);
});
const repo = fileURLToPath(new URL('../../../../..', import.meta.url));
/** Rootful podman with the base image (built here when missing), or why the podman backend is left out. */
const podmanProblem = ((): string | undefined => {
  if (process.getuid?.() !== 0 || !sandbox?.hostIds) return 'needs a root runtime with the bwrap sandbox';
  const podman = helperPath('podman');
  if (!podman) return 'podman is not installed';
  if (spawnSync(podman, ['image', 'exists', BASE_IMAGE]).status === 0) return undefined;
  const built = spawnSync('sh', [join(repo, 'scripts', 'build-node-image.sh')], { encoding: 'utf8' });
  return built.status === 0 ? undefined : `scripts/build-node-image.sh failed: ${built.stderr.trim()}`;
})();

interface Case {
  name: string;
  backend: SessionBackend;
  launch: (dir: string) => Promise<LaunchSpec>;
}
const fromDir = (dir: string) =>
  launchOf(`file://${dir}`, undefined, { engine: 'auto', maxSnapshotBytes: 0 });
const backends: Case[] = [
  { name: 'process-group', backend: createProcessGroupBackend(processGroup), launch: fromDir },
  ...(sandbox
    ? [
        {
          name: 'bwrap',
          backend: createBwrapBackend({ config, isolation: sandbox, instrumentPath: () => undefined }),
          launch: fromDir,
        },
      ]
    : []),
  ...(podmanProblem === undefined && sandbox?.hostIds
    ? (['runc', 'runsc'] as const).map((ociRuntime) => ({
        name: `podman + ${ociRuntime}`,
        backend: createPodmanBackend({
          config: { ...config, ociRuntime },
          hostIds: sandbox.hostIds!,
          cgroups: sandbox.cgroups,
        }),
        launch: async (dir: string): Promise<LaunchSpec> => ({
          kind: 'image',
          image: imageOf(dir),
          engine: 'podman',
        }),
      }))
    : []),
];
if (!sandbox) console.warn('backend contract: bwrap is not usable here; its cases are left out');
if (podmanProblem) console.warn(`backend contract: podman is left out: ${podmanProblem}`);

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

async function start({ backend, launch }: Case, fixture: string, env: Record<string, string> = {}) {
  const dir = artifact(fixture);
  const id = `w${Math.random().toString(36).slice(2, 10)}`;
  const sessionDir = join(config.dataDir, 'sessions', id);
  mkdirSync(join(sessionDir, 'tmp'), { recursive: true, mode: 0o700 });
  mkdirSync(join(sessionDir, 'home'), { recursive: true });
  const one = await backend.start({
    id,
    target: target(dir, env),
    launch: await launch(dir),
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

describe.each(backends)('session backend contract: $name', (backend) => {
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
    expect(cwd).not.toBe('');
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

// What a sandboxing backend promises on top: run inside the worker's isolation (its exec), the
// hostile agent's first probes fail on every one of them.
describe.each(backends.filter((b) => b.name !== 'process-group'))('sandboxing backend: $name', (backend) => {
  const exposed = createServer((_req, res) => res.end('a host service bound to every interface'));
  afterAll(() => exposed.close());

  it('holds no capabilities, is not root, cannot gain privileges, and sees none of the host files', async () => {
    const secret = join(config.dataDir, 'runtime-secret.txt');
    writeFileSync(secret, 'the runtime store');
    const one = await start(backend, 'echo');
    await one.worker.waitReady(20_000);
    const out = await run(
      one,
      'id -u; grep -E "^(CapEff|NoNewPrivs)" /proc/self/status; ' +
        `cat /etc/shadow 2>/dev/null && echo LEAK-shadow; cat ${secret} 2>/dev/null && echo LEAK-data; true`,
    );
    expect(out.stdout.split('\n')[0]).not.toBe('0');
    expect(out.stdout).toMatch(/CapEff:\s+0000000000000000/);
    // gVisor's own /proc/self/status has no NoNewPrivs line (podman asks for it in the OCI spec).
    if (!backend.name.includes('runsc')) expect(out.stdout).toMatch(/NoNewPrivs:\s+1/);
    expect(out.stdout).not.toContain('LEAK');
  });

  it.runIf(process.getuid?.() === 0)("reaches none of this host's addresses", async () => {
    await new Promise<void>((done) => exposed.listen(0, '0.0.0.0', done));
    const port = (exposed.address() as AddressInfo).port;
    const address = Object.values(os.networkInterfaces())
      .flat()
      .find((entry) => entry?.family === 'IPv4' && !entry.internal)?.address;
    expect(address).toBeDefined();
    const one = await start(backend, 'echo');
    await one.worker.waitReady(20_000);
    const target = `http://${address}:${port}/`;
    const out = await run(
      one,
      `node -e "fetch('${target}',{signal:AbortSignal.timeout(3000)}).then(r=>console.log('OPEN'),e=>console.log('CLOSED '+(e.cause?.code??e.name)))"`,
    );
    expect(out.stdout).toMatch(/^CLOSED/);
  });
});

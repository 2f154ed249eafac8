// Image artifacts end to end, with the official AWS SDK clients only: a runtime created from an
// image in podman's local store (built here FROM the local Node base image, no registry), its
// sessions one container each, on runc and on gVisor (runsc).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StopRuntimeSessionCommand } from '@aws-sdk/client-bedrock-agentcore';
import {
  CreateAgentRuntimeCommand,
  UpdateAgentRuntimeCommand,
} from '@aws-sdk/client-bedrock-agentcore-control';
import { podmanLabel } from './sessions/backends/podman.js';
import { helperPath } from './sessions/helpers.js';
import { detectIsolation } from './sessions/isolation.js';
import {
  ROLE_ARN,
  type TestRuntime,
  createReady,
  fixtureUri,
  invokeJson,
  pollStatus,
  runCommand,
  sdkClients,
  sessionId,
  sessionWorker,
  startRuntime,
  waitFor,
} from './test-support.js';
import { podmanImages } from './test-support/podman-images.js';

const BASE_IMAGE = 'localhost/agentrt/node:24';
/** Long enough that a worker killed when it runs out is told from one that exited on its own. */
const STOP_GRACE_MS = 10_000;
const repo = fileURLToPath(new URL('../../..', import.meta.url));
const podman = helperPath('podman');

/** Why image artifacts cannot run here, or undefined (the base image is built when missing). */
const problem = ((): string | undefined => {
  if (process.getuid?.() !== 0) return 'podman session containers need a root runtime';
  if (!podman) return 'podman is not installed';
  try {
    if (detectIsolation({ setting: 'auto', sandboxIds: { uid: 65534, gid: 65534 } }).mode !== 'bwrap')
      return 'the bwrap sandbox is not usable';
  } catch (error) {
    return (error as Error).message;
  }
  if (spawnSync(podman, ['image', 'exists', BASE_IMAGE]).status === 0) return undefined;
  const built = spawnSync('sh', [join(repo, 'scripts', 'build-node-image.sh')], { encoding: 'utf8' });
  return built.status === 0 ? undefined : `scripts/build-node-image.sh failed: ${built.stderr.trim()}`;
})();
if (problem) console.warn(`image artifacts: skipped: ${problem}`);

/** A fixture (echo unless named) as an image in podman's local store, `/app/build.txt` holding `build`. */
function buildEcho(tag: string, build = 'first', fixture = 'echo'): void {
  const dir = mkdtempSync(join(os.tmpdir(), 'agentrt-image-'));
  cpSync(fileURLToPath(fixtureUri(fixture)), dir, { recursive: true });
  writeFileSync(join(dir, 'build.txt'), build);
  const { command } = JSON.parse(readFileSync(join(dir, 'agentrt.json'), 'utf8')) as { command: string[] };
  writeFileSync(
    join(dir, 'Containerfile'),
    `FROM ${BASE_IMAGE}\nCOPY . /app\nCMD ${JSON.stringify(command)}\n`,
  );
  const built = podmanImages(podman!, ['build', '-q', '-t', tag, dir]);
  rmSync(dir, { recursive: true, force: true });
  if (built.status !== 0) throw new Error(`podman build: ${built.stderr}`);
}

/** The session containers of a runtime (by its data dir) still alive. */
function containers(dataDir: string): string[] {
  const out = spawnSync(podman!, ['ps', '-q', '--filter', `label=${podmanLabel(dataDir)}`], {
    encoding: 'utf8',
  });
  return out.stdout.trim().split('\n').filter(Boolean);
}

describe.skipIf(problem !== undefined).each(['runc', 'runsc'] as const)(
  'image artifacts on podman + %s',
  (ociRuntime) => {
    const image = `localhost/agentrt-test/echo-${ociRuntime}:1`;
    let rt: TestRuntime;
    const received: { path: string; body: string }[] = [];
    const collector = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ path: req.url ?? '', body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    beforeAll(async () => {
      buildEcho(image);
      await new Promise<void>((done) => collector.listen(0, '127.0.0.1', done));
      const otlpEndpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
      rt = await startRuntime({
        containerEngine: 'podman',
        ociRuntime,
        stopGraceMs: STOP_GRACE_MS,
        otlpEndpoint,
        otlpProtocol: 'http/json',
      });
    }, 120_000);
    afterAll(async () => {
      await rt?.close();
      collector.close();
      podmanImages(podman!, ['rmi', '-f', image]);
    }, 60_000);

    it('creates a runtime from a local image and runs each session in a container of its own', async () => {
      const arn = (
        await createReady(rt.control, `image_${ociRuntime}`, 'echo', {
          agentRuntimeArtifact: { containerConfiguration: { containerUri: image } },
        })
      ).agentRuntimeArn!;
      const live = () => containers(rt.dataDir).length;
      const before = live();
      expect(await invokeJson(rt.data, arn, sessionId('image-a'), { hello: 'a' })).toEqual({ hello: 'a' });
      expect(await invokeJson(rt.data, arn, sessionId('image-b'), { hello: 'b' })).toEqual({ hello: 'b' });
      expect(live()).toBe(before + 2);
      await rt.data.send(
        new StopRuntimeSessionCommand({ agentRuntimeArn: arn, runtimeSessionId: sessionId('image-a') }),
      );
      await waitFor(() => live() === before + 1, 15_000, 'the stopped session container removed');
    });

    it('sends telemetry only through its session relay, stamped with its session; refuses another', async () => {
      const arn = (
        await createReady(rt.control, `image_otlp_${ociRuntime}`, 'echo', {
          agentRuntimeArtifact: { containerConfiguration: { containerUri: image } },
        })
      ).agentRuntimeArn!;
      const sid = sessionId('image-otlp');
      await invokeJson(rt.data, arn, sid, {});
      const post = (claimed: string, name: string) => {
        const attributes = claimed ? [{ key: 'session.id', value: { stringValue: claimed } }] : [];
        const spans = [{ name, traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8) }];
        const body = JSON.stringify({
          resourceSpans: [{ resource: { attributes }, scopeSpans: [{ spans }] }],
        });
        return `node -e 'fetch("http://127.0.0.1:4318/v1/traces",{method:"POST",headers:{"content-type":"application/json"},body:${JSON.stringify(body)}}).then(r=>console.log(r.status),e=>console.log("CLOSED"))'`;
      };
      expect(
        (await runCommand(rt.data, arn, sid, post(sessionId('someone-else'), 'forged'))).stdout.trim(),
      ).toBe('403');
      expect((await runCommand(rt.data, arn, sid, post('', 'own-span'))).stdout.trim()).toBe('200');
      const forwarded = received.find((r) => r.body.includes('own-span'));
      expect(forwarded?.body).toContain(sid);
      expect(received.some((r) => r.body.includes('forged'))).toBe(false);
    });

    it('flushes the spans a session holds when it is stopped right after an invoke (StopRuntimeSession)', async () => {
      const flushing = `localhost/agentrt-test/flush-on-stop-${ociRuntime}:1`;
      buildEcho(flushing, 'first', 'flush-on-stop');
      try {
        const arn = (
          await createReady(rt.control, `image_flush_${ociRuntime}`, 'echo', {
            agentRuntimeArtifact: { containerConfiguration: { containerUri: flushing } },
          })
        ).agentRuntimeArn!;
        const sid = sessionId('image-flush');
        const span = `held-until-stop-${ociRuntime}`;
        expect(await invokeJson(rt.data, arn, sid, { span })).toEqual({ pending: 1 });
        const stopStartMs = Date.now();
        await rt.data.send(new StopRuntimeSessionCommand({ agentRuntimeArn: arn, runtimeSessionId: sid }));
        // The agent exited on its own once flushed, not killed at the end of the grace period.
        expect(Date.now() - stopStartMs).toBeLessThan(STOP_GRACE_MS);
        // Forwarded by the session's relay during the stop, stamped with the session.
        await waitFor(() => received.some((r) => r.body.includes(span)), 10_000, 'the held span');
        expect(received.find((r) => r.body.includes(span))?.body).toContain(sid);
      } finally {
        podmanImages(podman!, ['rmi', '-f', flushing]);
      }
    }, 60_000);

    it('answers 424 with the last output of a container that dies mid-invocation, then starts a new one', async () => {
      const crashing = `localhost/agentrt-test/crashing-${ociRuntime}:1`;
      buildEcho(crashing, 'first', 'crashing');
      try {
        const arn = (
          await createReady(rt.control, `image_crash_${ociRuntime}`, 'echo', {
            agentRuntimeArtifact: { containerConfiguration: { containerUri: crashing } },
          })
        ).agentRuntimeArn!;
        const sid = sessionId('image-crash');
        const crash = await invokeJson(rt.data, arn, sid, { crash: true }).catch((e: unknown) => e as Error);
        expect((crash as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode).toBe(424);
        expect((crash as Error).message).toContain('crashing fixture: exiting on purpose');
        expect(await invokeJson(rt.data, arn, sid, {})).toMatchObject({ ok: true });
      } finally {
        podmanImages(podman!, ['rmi', '-f', crashing]);
      }
    }, 60_000);

    it('gives a session whose container died unseen a fresh worker when it refuses the connection', async () => {
      const arn = (
        await createReady(rt.control, `image_killed_${ociRuntime}`, 'echo', {
          agentRuntimeArtifact: { containerConfiguration: { containerUri: image } },
        })
      ).agentRuntimeArn!;
      const sid = sessionId('image-killed');
      expect(await invokeJson(rt.data, arn, sid, { call: 1 })).toEqual({ call: 1 });
      const session = rt.server.sessions().find((s) => s.sessionId === sid)!;
      const dead = session.worker!;
      const pid = Number(
        spawnSync(podman!, ['inspect', '--format', '{{.State.Pid}}', `agentrt-${dead.id}`], {
          encoding: 'utf8',
        }).stdout.trim(),
      );
      // The container's first process (and so the container) dies at once; podman's client, the
      // runtime's worker process, ends well after it (measured: ~700 ms).
      process.kill(pid, 'SIGKILL');
      await waitFor(() => !existsSync(`/proc/${pid}`), 5000, 'the killed container process gone');
      expect(dead.exited).toBeUndefined(); // the runtime has not seen the exit yet
      expect(await invokeJson(rt.data, arn, sid, { call: 2 })).toEqual({ call: 2 });
      expect(sessionWorker(rt, sid)).toMatchObject({ state: 'ready' });
      expect(sessionWorker(rt, sid).workerId).not.toBe(dead.id);
    }, 60_000);

    it('fails CreateAgentRuntime with the engine’s own words for an image no registry has', async () => {
      const created = await rt.control.send(
        new CreateAgentRuntimeCommand({
          agentRuntimeName: `image_missing_${ociRuntime}`,
          agentRuntimeArtifact: {
            containerConfiguration: { containerUri: 'localhost/agentrt-test/nowhere:1' },
          },
          roleArn: ROLE_ARN,
          networkConfiguration: { networkMode: 'PUBLIC' },
        }),
      );
      const got = await pollStatus(rt.control, created.agentRuntimeId!);
      expect(got.status).toBe('CREATE_FAILED');
      expect(got.failureReason).toMatch(/localhost\/agentrt-test\/nowhere:1: podman pull: /);
    }, 60_000);
  },
);

// A runtime killed with SIGKILL cannot stop its containers; the next one on that data dir does.
describe.skipIf(problem !== undefined)('image sessions of a runtime killed with SIGKILL', () => {
  const image = 'localhost/agentrt-test/echo-orphan:1';
  const dataDir = mkdtempSync(join(os.tmpdir(), 'agentrt-orphans-'));
  const main = join(repo, 'packages', 'runtime', 'dist', 'main.js');
  let child: ChildProcess | undefined;

  const startMain = async (): Promise<ReturnType<typeof sdkClients>> => {
    let output = '';
    child = spawn(process.execPath, [main], {
      env: { PATH: process.env.PATH, HOME: dataDir, AGENTRT_RUNTIME_PORT: '0', AGENTRT_DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    await waitFor(() => output.includes('runtime listening'), 20_000, 'runtime listening');
    const line = output.split('\n').find((l) => l.includes('runtime listening'))!;
    return sdkClients((JSON.parse(line) as { url: string }).url);
  };

  afterAll(() => {
    child?.kill('SIGKILL');
    spawnSync(podman!, ['rm', '-f', '--filter', `label=${podmanLabel(dataDir)}`]);
    podmanImages(podman!, ['rmi', '-f', image]);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('leaves its containers running, and the next start on its data dir removes them', async () => {
    buildEcho(image);
    const clients = await startMain();
    const arn = (
      await createReady(clients.control, 'orphans', 'echo', {
        agentRuntimeArtifact: { containerConfiguration: { containerUri: image } },
      })
    ).agentRuntimeArn!;
    await invokeJson(clients.data, arn, sessionId('orphan-a'), {});
    await invokeJson(clients.data, arn, sessionId('orphan-b'), {});
    expect(containers(dataDir)).toHaveLength(2);
    child!.kill('SIGKILL');
    await new Promise((r) => child!.once('exit', r));
    expect(containers(dataDir)).toHaveLength(2);
    const again = await startMain();
    await waitFor(() => containers(dataDir).length === 0, 20_000, 'the orphaned containers removed');
    again.control.destroy();
    again.data.destroy();
  }, 120_000);
});

const registryBin = ['/usr/bin/docker-registry', '/usr/local/bin/docker-registry'].find((p) => existsSync(p));

/** Debian's docker-registry on a free loopback port, storing in `dir`; resolves with its address. */
async function startRegistry(dir: string): Promise<{ child: ChildProcess; address: string }> {
  const probe = createServer();
  await new Promise<void>((done) => probe.listen(0, '127.0.0.1', done));
  const { port } = probe.address() as AddressInfo;
  await new Promise((done) => probe.close(done));
  const address = `127.0.0.1:${port}`;
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    `version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, 'data')}\nhttp:\n  addr: ${address}\n`,
  );
  const child = spawn(registryBin!, ['serve', config], { stdio: 'ignore' });
  await waitFor(
    async () => (await fetch(`http://${address}/v2/`).catch(() => undefined))?.status === 200,
    15_000,
    'the registry answering',
  );
  return { child, address };
}

describe.skipIf(problem !== undefined || !registryBin)(
  'image artifacts from a registry, pinned per version',
  () => {
    const dir = mkdtempSync(join(os.tmpdir(), 'agentrt-registry-'));
    const source = 'localhost/agentrt-test/pinned-src:1';
    let registry: { child: ChildProcess; address: string };
    let rt: TestRuntime;
    const built: string[] = [source];
    const podmanOk = (args: string[]) => {
      const run = podmanImages(podman!, args);
      if (run.status !== 0) throw new Error(`podman ${args.join(' ')}: ${run.stderr}`);
    };
    const push = (ref: string) => podmanOk(['push', '-q', '--tls-verify=false', source, ref]);
    /** What /app/build.txt holds in a new session's container. */
    const buildOf = async (arn: string, label: string) => {
      await invokeJson(rt.data, arn, sessionId(label), {});
      const read = `node -p 'require("fs").readFileSync("/app/build.txt","utf8")'`;
      return (await runCommand(rt.data, arn, sessionId(label), read)).stdout.trim();
    };
    const create = (name: string, containerUri: string) =>
      rt.control
        .send(
          new CreateAgentRuntimeCommand({
            agentRuntimeName: name,
            agentRuntimeArtifact: { containerConfiguration: { containerUri } },
            roleArn: ROLE_ARN,
            networkConfiguration: { networkMode: 'PUBLIC' },
          }),
        )
        .then((created) => pollStatus(rt.control, created.agentRuntimeId!));

    beforeAll(async () => {
      registry = await startRegistry(dir);
      rt = await startRuntime({ containerEngine: 'podman', insecureRegistries: [registry.address] });
    }, 60_000);
    afterAll(async () => {
      await rt?.close();
      registry?.child.kill();
      for (const image of built) podmanImages(podman!, ['rmi', '-f', image]);
      rmSync(dir, { recursive: true, force: true });
    }, 60_000);

    it('pulls at create and pins the image: a re-pushed tag changes nothing until UpdateAgentRuntime', async () => {
      const ref = `${registry.address}/agentrt-test/pinned:1`;
      built.push(ref);
      buildEcho(source, 'first');
      push(ref);
      const created = await create('pinned', ref);
      expect(created.status).toBe('READY');
      const arn = created.agentRuntimeArn!;
      expect(await buildOf(arn, 'pin-a')).toBe('first');
      // The tag moves, in the registry and in the local store alike.
      buildEcho(source, 'second');
      push(ref);
      podmanOk(['tag', source, ref]);
      expect(await buildOf(arn, 'pin-b')).toBe('first');
      await rt.control.send(
        new UpdateAgentRuntimeCommand({
          agentRuntimeId: created.agentRuntimeId!,
          agentRuntimeArtifact: { containerConfiguration: { containerUri: ref } },
          roleArn: ROLE_ARN,
          networkConfiguration: { networkMode: 'PUBLIC' },
        }),
      );
      const updated = await pollStatus(rt.control, created.agentRuntimeId!);
      expect([updated.status, updated.agentRuntimeVersion]).toEqual(['READY', '2']);
      expect(await buildOf(arn, 'pin-c')).toBe('second');
    }, 120_000);

    it('fails CreateAgentRuntime in the engine’s words: another platform’s image, a registry that is down', async () => {
      const arm = 'localhost/agentrt-test/arm64:1';
      built.push(arm);
      writeFileSync(join(dir, 'Containerfile'), 'FROM scratch\nCOPY config.yml /config.yml\n');
      podmanOk(['build', '-q', '--platform', 'linux/arm64', '-t', arm, dir]);
      const wrong = await create('pinned_arm', arm);
      expect(wrong.status).toBe('CREATE_FAILED');
      expect(wrong.failureReason).toMatch(/is an image for linux\/arm64; this host runs linux\/amd64/);
      registry.child.kill();
      await new Promise((done) => registry.child.once('exit', done));
      const down = await create('pinned_down', `${registry.address}/agentrt-test/never-pushed:1`);
      expect(down.status).toBe('CREATE_FAILED');
      expect(down.failureReason).toMatch(/podman pull: .*connection refused/);
    }, 60_000);
  },
);

// The examples' images, built here as the README says (scripts/build-example-images.sh), hosted.
describe.skipIf(problem !== undefined)('a reference agent’s image built on this machine', () => {
  const image = 'localhost/agentrt/custom-agent:latest';
  let rt: TestRuntime;
  beforeAll(async () => {
    const built = spawnSync('sh', [join(repo, 'scripts', 'build-example-images.sh'), 'custom-agent'], {
      encoding: 'utf8',
      timeout: 280_000,
    });
    if (built.status !== 0) throw new Error(`build-example-images.sh: ${built.stderr}`);
    rt = await startRuntime({ containerEngine: 'podman' });
  }, 300_000);
  afterAll(async () => {
    await rt?.close();
    podmanImages(podman!, ['rmi', '-f', image]);
  }, 60_000);

  it('answers an invocation as a session container, through the AWS SDK', async () => {
    const created = await createReady(rt.control, 'custom_agent_image', 'echo', {
      agentRuntimeArtifact: { containerConfiguration: { containerUri: image } },
      environmentVariables: { AGENTRT_MODEL_PROVIDER: 'offline' },
    });
    expect([created.status, created.failureReason]).toEqual(['READY', undefined]);
    const answer = (await invokeJson(rt.data, created.agentRuntimeArn!, sessionId('custom-image'), {
      input: { prompt: 'Weather at 42.3601,-71.0589' },
    })) as { output?: { message?: { content?: { text?: string }[] } } };
    expect(answer.output?.message?.content?.[0]?.text).toMatch(/\S/);
  }, 60_000);
});

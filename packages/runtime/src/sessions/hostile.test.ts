// The hostile-agent suite: an agent that runs whatever shell command the test sends it, inside a real
// session of the runnable service (dist/main.js), started as root and as an ordinary user. Each check
// is what an attacker controlling that agent would try; each must fail, except the allowed paths.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { type IncomingMessage, type Server, createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  InvokeAgentRuntimeCommandCommand,
  StopRuntimeSessionCommand,
} from '@aws-sdk/client-bedrock-agentcore';
import { CreateAgentRuntimeCommand } from '@aws-sdk/client-bedrock-agentcore-control';
import { podmanLabel } from './backends/podman.js';
import { sweepStorageVolumes } from './storage-volume.js';
import {
  ROLE_ARN,
  createReady,
  invokeJson,
  runCommand,
  sdkClients,
  sessionId,
  waitFor,
} from '../test-support.js';
import { type KubeApiServer, startKubeApiServer } from '../test-support/k8s/api-server.js';
import { writeKubeconfig } from '../test-support/k8s/kubeconfig.js';
import { type Kubelet, startKubelet } from '../test-support/k8s/kubelet.js';
import { nodeBackend } from '../test-support/k8s/node-backend.js';
import { podmanImages } from '../test-support/podman-images.js';

const main = resolve(fileURLToPath(import.meta.url), '..', '..', '..', 'dist', 'main.js');
const isRoot = process.getuid?.() === 0;
const canSandbox =
  process.platform === 'linux' &&
  spawnSync('bwrap', ['--version']).status === 0 &&
  spawnSync('socat', ['-V']).status === 0;
/** The ordinary user the second variant runs the runtime as (the hosts' CI and dev users are root). */
const USER_UID = 1000;

type Shell = { code: number | null; stdout: string; stderr: string };

function listen(server: Server): Promise<number> {
  return new Promise((done) =>
    server.listen(0, '127.0.0.1', () => done((server.address() as AddressInfo).port)),
  );
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((done) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => done(text));
  });
}

/** The helpers a runtime runs in front of its workers and commands, planted to see whether any runs. */
const HELPER_NAMES = [
  'setpriv',
  'bwrap',
  'nsenter',
  'socat',
  'slirp4netns',
  'nft',
  'sh',
  'cat',
  'env',
  'docker',
];
const FIXTURE = resolve(fileURLToPath(import.meta.url), '..', '..', '..', 'test-fixtures', 'hostile');

/**
 * The hostile agent with a fake of every helper beside it: each records who ran it in `markers`
 * (a host folder, absent inside any sandbox) and then runs the real program.
 */
function plantedArtifact(root: string): { dir: string; markers: string } {
  const dir = join(root, 'planted');
  const markers = join(root, 'markers');
  cpSync(FIXTURE, dir, { recursive: true });
  mkdirSync(markers, { mode: 0o777 });
  chmodSync(markers, 0o777);
  chmodSync(dir, 0o755);
  for (const name of HELPER_NAMES)
    writeFileSync(
      join(dir, name),
      `#!/bin/sh
id -u >> ${markers}/${name} 2>/dev/null
exec /usr/bin/${name} "$@"
`,
      { mode: 0o755 },
    );
  return { dir, markers };
}

/** The same fakes, as shell lines a session runs to plant them in its own view of `bin`. */
function plantInSession(bin: string): string {
  return [
    `mkdir -p ${bin}`,
    ...HELPER_NAMES.map(
      (name) =>
        `printf '#!/bin/sh\\nid -u >> ${bin}/ran-${name}\\ngrep CapEff /proc/self/status >> ${bin}/ran-${name}\\nexec /usr/bin/${name} "$@"\\n' > ${bin}/${name} && chmod 755 ${bin}/${name}`,
    ),
    `set -- ${bin}/*; echo $#`, // (gVisor's ls cannot stat a folder made this way: EINVAL)
  ].join(' && ');
}

/**
 * A runtime whose `environmentVariables` put its artifact (holding a fake of every helper) first on
 * PATH, after an empty element (the working directory, which is the artifact too): a session start,
 * an invocation and a command must run none of the fakes.
 */
async function expectNoPlantedHelperRuns(
  clients: ReturnType<typeof sdkClients>,
  root: string,
): Promise<void> {
  const planted = plantedArtifact(root);
  const nodeDir = dirname(process.execPath);
  const pathArn = (
    await createReady(clients.control, 'hostile_path', 'hostile', {
      agentRuntimeArtifact: { containerConfiguration: { containerUri: pathToFileURL(planted.dir).href } },
      environmentVariables: { PATH: `:${planted.dir}:${nodeDir}:/usr/bin:/bin` },
    })
  ).agentRuntimeArn!;
  const sid = sessionId('planted-path');
  const answer = (await invokeJson(clients.data, pathArn, sid, { sh: 'echo invoked' })) as Shell;
  expect(answer.stdout.trim()).toBe('invoked');
  const command = await runCommand(clients.data, pathArn, sid, 'echo done');
  expect(command.stdout).toContain('done');
  expect(readdirSync(planted.markers)).toEqual([]);
}

const INGEST_TOKEN = 'ingest-secret';

/** OTLP/JSON attributes from key/value pairs. */
function kvs(pairs: readonly (readonly [string, string])[]) {
  return pairs.map(([key, value]) => ({ key, value: { stringValue: value } }));
}

/** One resource with one span `name`, its resource attributes as given. */
function spans(resource: readonly (readonly [string, string])[], name = 'forged') {
  return {
    resourceSpans: [
      {
        resource: { attributes: kvs(resource) },
        scopeSpans: [
          { scope: { name: 'hostile' }, spans: [{ name, traceId: '0'.repeat(32), spanId: '1'.repeat(16) }] },
        ],
      },
    ],
  };
}

/** One counter data point with the given attributes (by default the runtime's own `Invocations`). */
function counter(attributes: readonly (readonly [string, string])[], name = 'Invocations') {
  const point = { asInt: '1000', timeUnixNano: String(Date.now() * 1e6), attributes: kvs(attributes) };
  const sum = { isMonotonic: true, aggregationTemporality: 1, dataPoints: [point] };
  return {
    resourceMetrics: [{ resource: { attributes: [] }, scopeMetrics: [{ metrics: [{ name, sum }] }] }],
  };
}

/** 64 exports of 15 MiB at once to the session's relay, each written as the relay reads it. */
const EXPORT_BURST = [
  'const http=require("http");const chunk=Buffer.alloc(65536,32);',
  'const one=()=>new Promise(done=>{',
  'const req=http.request({host:"127.0.0.1",port:4318,path:"/v1/traces",method:"POST",',
  'headers:{"content-type":"application/json","content-length":15*1048576}},',
  'res=>{res.resume();done(res.statusCode)});',
  'req.on("error",()=>done("closed"));let left=240;',
  'const write=()=>{while(left>0){left--;if(!req.write(chunk))return req.once("drain",write)}req.end()};write()});',
  'Promise.all(Array.from({length:64},one)).then(s=>console.log(JSON.stringify(s)))',
].join('');

/** The shell line a session runs to POST `body` to its telemetry relay; it prints the status. */
function otlpPost(path: string, body: unknown): string {
  return `node -e 'fetch("http://127.0.0.1:4318${path}",{method:"POST",headers:{"content-type":"application/json"},body:${JSON.stringify(JSON.stringify(body))}}).then(r=>console.log(r.status))'`;
}

/** The runtime's resident memory (VmRSS) in bytes. */
function rssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) * 1024;
}

/** A non-loopback address of this host (a service bound to 0.0.0.0 answers on it). */
function hostAddress(): string | undefined {
  for (const entries of Object.values(os.networkInterfaces()))
    for (const entry of entries ?? []) if (entry.family === 'IPv4' && !entry.internal) return entry.address;
  return undefined;
}

/** The cloud metadata address, put on loopback for the egress test (root only); false when it cannot be. */
const METADATA_IP = '169.254.169.254';
function addMetadataAddress(): boolean {
  return spawnSync('ip', ['addr', 'add', `${METADATA_IP}/32`, 'dev', 'lo']).status === 0;
}

/** The ordinary user must be able to read the built runtime: a checkout under a 0700 folder (a `mktemp -d` clone) is not. */
const userCanRead =
  isRoot &&
  spawnSync('setpriv', [
    `--reuid=${USER_UID}`,
    `--regid=${USER_UID}`,
    '--clear-groups',
    '--',
    'test',
    '-r',
    main,
  ]).status === 0;

/** The hostile agent as an image FROM the local Node base image, or why image sessions cannot run here. */
const HOSTILE_IMAGE = 'localhost/agentrt-test/hostile:1';
const imageProblem = ((): string | undefined => {
  if (!isRoot) return 'podman session containers need a root runtime';
  if (spawnSync('podman', ['--version']).status !== 0) return 'podman is not installed';
  const repo = resolve(FIXTURE, '..', '..', '..', '..');
  const base = spawnSync('podman', ['image', 'exists', 'localhost/agentrt/node:24']).status === 0;
  if (!base && spawnSync('sh', [join(repo, 'scripts', 'build-node-image.sh')]).status !== 0)
    return 'scripts/build-node-image.sh failed';
  const dir = mkdtempSync(join(os.tmpdir(), 'agentrt-hostile-image-'));
  cpSync(FIXTURE, dir, { recursive: true });
  writeFileSync(
    join(dir, 'Containerfile'),
    'FROM localhost/agentrt/node:24\nCOPY . /app\nCMD ["node", "server.mjs"]\n',
  );
  const built = podmanImages('podman', ['build', '-q', '-t', HOSTILE_IMAGE, dir]);
  rmSync(dir, { recursive: true, force: true });
  return built.status === 0 ? undefined : `podman build: ${built.stderr}`;
})();

/** A test API server and a test kubelet running pods as bwrap sandboxes in `dataDir`. */
async function startNode(dataDir: string) {
  const api = await startKubeApiServer();
  const kubeconfig = writeKubeconfig(api.url);
  mkdirSync(dataDir);
  const kubelet = await startKubelet({ api, kubeconfig, dataDir, backend: nodeBackend() });
  return { api, kubelet, kubeconfig };
}

type Variant = { label: string; uid: number | undefined; oci?: 'runc' | 'runsc'; k8s?: boolean };
const variants: Variant[] = [
  { label: 'runtime running as root', uid: undefined },
  { label: `runtime running as uid ${USER_UID}`, uid: USER_UID },
  // The same agent as an image: one podman container per session, on runc and on gVisor.
  { label: 'image on podman + runc', uid: undefined, oci: 'runc' as const },
  { label: 'image on podman + runsc', uid: undefined, oci: 'runsc' as const },
  // AGENTRT_SESSIONS=kubernetes (pods mode): each session a pod on the test API server, run by the
  // test kubelet in this process as a bwrap sandbox of its own.
  { label: 'kubernetes pods on the test kubelet', uid: undefined, k8s: true },
].filter((v) => (v.uid === undefined || userCanRead) && (!v.oci || !imageProblem));
if (imageProblem) console.warn(`hostile agent as an image: skipped: ${imageProblem}`);

describe.runIf(canSandbox && isRoot && !userCanRead)(
  `hostile agent, runtime running as uid ${USER_UID}`,
  () => {
    it.skip(`skipped: uid ${USER_UID} cannot read ${main} (a folder above it is closed to other users)`, () => {});
  },
);

describe.skipIf(!canSandbox).each(variants)(
  'hostile agent in a sandboxed session, $label',
  ({ uid, oci, k8s }) => {
    const root = mkdtempSync(join(os.tmpdir(), 'agentrt-hostile-'));
    let cluster: { api: KubeApiServer; kubelet: Kubelet; kubeconfig: string } | undefined;
    const fakeHome = join(root, 'home');
    const dataDir = join(root, 'data');
    /** The folder the runtime is started in (a user's project, say): it must leave nothing there. */
    const workDir = join(root, 'cwd');
    const canary = `canary-${Math.random().toString(36).slice(2)}`;
    // Why a case does not run in this variant (skipped tests say so in their names).
    const rootOnly = uid === undefined ? '' : ' (skipped: needs a root runtime for cgroups and volumes)';
    /** Open on the kubernetes variant (issue #33): the case is skipped there, saying why. */
    const gap = (why: string) => (k8s ? ` (skipped on kubernetes, open: ${why})` : '');
    const LIMITS = 'the test kubelet runs every pod with its node defaults, not the pod spec limits';
    const NO_RELAY = 'a pod has no telemetry relay: its exports reach nothing';
    let runtimeProcess: ChildProcess | undefined;
    let url = '';
    let arn = '';
    let clients: ReturnType<typeof sdkClients>;
    const received: { path: string; body: string; authorization: string | undefined }[] = [];
    // A collector with an ingest token (AGENTRT_INGEST_TOKEN): exports without it are refused.
    const otlp = createServer((req, res) => {
      void readBody(req).then((body) => {
        const authorization = req.headers.authorization;
        received.push({ path: req.url ?? '', body, authorization });
        res.writeHead(authorization === `Bearer ${INGEST_TOKEN}` ? 200 : 401, {
          'content-type': 'application/json',
        });
        res.end('{}');
      });
    });
    const allowed = createServer((_req, res) => res.end('hello from an allowlisted host port'));
    const forbidden = createServer((_req, res) => res.end('this host port must stay closed'));
    let ports = { otlp: 0, allowed: 0, forbidden: 0 };
    let output = '';

    const sh = async (session: string, command: string): Promise<Shell> =>
      (await invokeJson(clients.data, arn, sessionId(session), { sh: command })) as Shell;

    /** Where a session plants its fake helpers: first on the runtime's PATH, absent on the host. */
    const evilBin = `/tmp/agentrt-evil-${Math.random().toString(36).slice(2)}/bin`;
    const exposed = createServer((_req, res) => res.end('a host service bound to every interface'));
    let metadataAdded = false;

    const startRuntimeProcess = async () => {
      output = '';
      const argv = [
        ...(uid === undefined ? [] : ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--']),
        process.execPath,
        main,
      ];
      runtimeProcess = spawn(argv[0]!, argv.slice(1), {
        env: {
          // The README's PATH puts the checkout's .node/bin first; here a folder the session can create.
          PATH: `${evilBin}:${process.env.PATH}`,
          HOME: fakeHome,
          AGENTRT_RUNTIME_PORT: '0',
          AGENTRT_DATA_DIR: dataDir,
          AGENTRT_SANDBOX_HOST_PORTS: String(ports.allowed),
          OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${ports.otlp}`,
          OTEL_EXPORTER_OTLP_HEADERS: `Authorization=Bearer%20${INGEST_TOKEN}`,
          AGENTRT_ISOLATION: 'bwrap',
          AGENTRT_SESSION_MEMORY_MB: '128',
          AGENTRT_SESSION_PIDS: '64',
          AGENTRT_SESSION_DISK_MB: '64',
          AGENTRT_SESSION_STORAGE_MB: '32',
          ...(oci ? { AGENTRT_CONTAINER_ENGINE: 'podman', AGENTRT_OCI_RUNTIME: oci } : {}),
          ...(cluster ? { AGENTRT_SESSIONS: 'kubernetes', KUBECONFIG: cluster.kubeconfig } : {}),
        },
        cwd: workDir,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      runtimeProcess.stdout!.on('data', (c: Buffer) => (output += c.toString('utf8')));
      await waitFor(() => output.includes('runtime listening'), 20_000, 'runtime listening');
      url = (JSON.parse(output.split('\n').find((l) => l.includes('runtime listening'))!) as { url: string })
        .url;
      clients = sdkClients(url);
    };

    beforeAll(async () => {
      mkdirSync(join(fakeHome, '.aws'), { recursive: true });
      writeFileSync(join(fakeHome, '.aws', 'credentials'), canary);
      mkdirSync(dataDir);
      mkdirSync(workDir);
      if (uid !== undefined) {
        for (const dir of [root, fakeHome, dataDir, workDir]) chownSync(dir, uid, uid);
        chmodSync(root, 0o755);
      }
      ports = {
        otlp: await listen(otlp),
        allowed: await listen(allowed),
        forbidden: await listen(forbidden),
      };
      await new Promise<void>((done) => exposed.listen(0, '0.0.0.0', done));
      metadataAdded = isRoot && addMetadataAddress();
      if (k8s) cluster = await startNode(join(root, 'node'));
      await startRuntimeProcess();
      const image = oci
        ? { agentRuntimeArtifact: { containerConfiguration: { containerUri: HOSTILE_IMAGE } } }
        : {};
      arn = (await createReady(clients.control, 'hostile', 'hostile', image)).agentRuntimeArn!;
    }, 60_000);

    afterAll(async () => {
      clients?.control.destroy();
      clients?.data.destroy();
      runtimeProcess?.kill('SIGKILL');
      // A killed runtime leaves its session containers running (the next start on its data dir removes them).
      if (oci) spawnSync('podman', ['rm', '-f', '--filter', `label=${podmanLabel(dataDir)}`]);
      // A killed runtime leaves its sessions' storage volumes mounted (the next start unmounts them).
      await cluster?.kubelet.close();
      await cluster?.api.close();
      await sweepStorageVolumes(root);
      for (const server of [otlp, allowed, forbidden, exposed]) server.close();
      if (metadataAdded) spawnSync('ip', ['addr', 'del', `${METADATA_IP}/32`, 'dev', 'lo']);
      rmSync(root, { recursive: true, force: true });
    });

    it('holds no capabilities, is not root, cannot gain privileges or mount', async () => {
      const out = await sh(
        'privileges',
        'id -u; grep -E "^(CapEff|CapPrm|CapBnd|NoNewPrivs)" /proc/self/status; ' +
          'mount -t tmpfs none /tmp 2>&1; echo "mount=$?"; umount -l /run/agentrt 2>&1; echo "umount=$?"; ' +
          'mount -o remount,rw /usr 2>&1; echo "remount=$?"; touch /usr/x 2>&1; echo "write=$?"',
      );
      const lines = out.stdout.split('\n');
      expect(lines[0]).not.toBe('0');
      expect(out.stdout).toMatch(/CapEff:\s+0000000000000000/);
      expect(out.stdout).toMatch(/CapPrm:\s+0000000000000000/);
      // gVisor's /proc/<pid>/status has no NoNewPrivs line; the container's spec sets it all the same.
      if (oci !== 'runsc') expect(out.stdout).toMatch(/NoNewPrivs:\s+1/);
      for (const op of ['mount', 'umount', 'remount', 'write'])
        expect(out.stdout).toMatch(new RegExp(`${op}=[1-9]`));
    });

    it('sees none of the host files outside its view: fake home canary, /etc/shadow, data dir, the checkout', async () => {
      const repo = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..', '..');
      const out = await sh(
        'files',
        [
          `cat ${join(fakeHome, '.aws', 'credentials')}`,
          'cat /etc/shadow',
          `ls ${fakeHome}`,
          `ls ${join(dataDir, 'runtime.sqlite')}`,
          `cat ${join(repo, 'package.json')}`,
          `ls ${join(repo, '.git')}`,
          `cat ${join(repo, 'README.md')}`,
          `ls ${join(repo, 'docs')}`,
        ]
          .map((c) => `${c} >/dev/null 2>&1 && echo "LEAK: ${c}"`)
          .join('; ') + `; grep -rs ${canary} /tmp /run /etc "$HOME" | head -1; true`,
      );
      expect(out.stdout).toBe('');
    });

    it("cannot reach another session's files, worker or sockets", async () => {
      const a = await sh(
        'session-a',
        'echo secret-of-a > "$HOME/secret"; echo "$HOME"; ls -d /run/agentrt/*',
      );
      const home = a.stdout.split('\n')[0]!;
      const b = await sh('session-b', `cat ${home}/secret; ls ${join(dataDir, 'sessions')}`);
      expect(b.stdout).not.toContain('secret-of-a');
      expect(b.stderr).toContain('No such file or directory');
      // It sees its own session folder only.
      expect(b.stdout.trim().split('\n')).toHaveLength(1);
      if (!oci) expect(b.stdout).not.toContain(home.split('/').at(-2)); // a container's HOME is its own /tmp
      // Only its own worker socket exists in its bridge dir; the worker port is its own loopback (a
      // container's is published on a loopback port of the host's, and it has no bridge dir).
      if (!oci) expect(a.stdout).toContain('/run/agentrt/worker.sock');
    });

    it.skipIf(k8s)(
      `cannot reach the runtime API, the collector or other host ports; reaches the allowlisted one${gap('all closed; egress allow-lists are NetworkPolicies, which the test kubelet does not enforce')}`,
      async () => {
        const runtimePort = new URL(url).port;
        const fetchScript = (target: string) =>
          `node -e "fetch('${target}',{signal:AbortSignal.timeout(3000)}).then(r=>r.text()).then(t=>console.log('OPEN ${target} '+t.slice(0,60)),e=>console.log('CLOSED ${target} '+(e.cause?.code??e.name)))"`;
        const targets = [
          `http://127.0.0.1:${runtimePort}/runtimes`,
          `http://127.0.0.1:${ports.otlp}/api/sessions`,
          `http://127.0.0.1:${ports.forbidden}/`,
          `http://10.0.2.2:${runtimePort}/runtimes`,
          `http://127.0.0.1:${ports.allowed}/`,
        ];
        const out = await sh('network', targets.map(fetchScript).join('; '));
        for (const target of targets.slice(0, 4)) expect(out.stdout).toContain(`CLOSED ${target}`);
        expect(out.stdout).toContain(
          `OPEN http://127.0.0.1:${ports.allowed}/ hello from an allowlisted host port`,
        );
        // The runtime's port does not show in the namespace's socket table either.
        const tcp = await sh('network', 'cat /proc/net/tcp /proc/net/tcp6');
        expect(tcp.stdout.toUpperCase()).not.toContain(
          `:${Number(runtimePort).toString(16).toUpperCase().padStart(4, '0')} `,
        );
      },
    );

    it.skipIf(k8s)(
      `sends telemetry only as itself: the relay stamps its session and refuses spans claiming another${gap(NO_RELAY)}`,
      async () => {
        const post = (resourceSession: string | undefined) =>
          otlpPost('/v1/traces', spans(resourceSession ? [['session.id', resourceSession]] : []));
        const forged = await sh('telemetry', post(sessionId('someone-else')));
        expect(forged.stdout.trim()).toBe('403');
        const read = await sh(
          'telemetry',
          `node -e 'fetch("http://127.0.0.1:4318/api/sessions",{method:"POST",body:"{}"}).then(r=>console.log(r.status))'`,
        );
        expect(read.stdout.trim()).toBe('404');
        const own = await sh('telemetry', post(undefined));
        expect(own.stdout.trim()).toBe('200');
        const export_ = received.find((r) => r.path === '/v1/traces' && r.body.includes('forged'));
        expect(export_).toBeDefined();
        const body = JSON.parse(export_!.body) as {
          resourceSpans: { resource: { attributes: { key: string; value: { stringValue: string } }[] } }[];
        };
        const attrs = Object.fromEntries(
          body.resourceSpans[0]!.resource.attributes.map((a) => [a.key, a.value.stringValue]),
        );
        expect(attrs['session.id']).toBe(sessionId('telemetry'));
        expect(attrs['cloud.resource_id']).toBe(arn);
        expect(attrs['service.name']).toBe('hostile');
      },
    );

    it.skipIf(k8s)(
      `sends no telemetry as another session, the runtime or its metrics; forwards with the runtime's ingest token${gap(NO_RELAY)}`,
      async () => {
        const own = sessionId('forging');
        const other = sessionId('forged-victim');
        const attempts = {
          'duplicate session.id keys': otlpPost(
            '/v1/traces',
            spans([
              ['session.id', own],
              ['session.id', other],
            ]),
          ),
          "the runtime's service name": otlpPost('/v1/traces', spans([['service.name', 'agentrt-runtime']])),
          "the runtime's metric dimensions": otlpPost(
            '/v1/metrics',
            counter(
              [
                ['Operation', 'InvokeAgentRuntime'],
                ['Resource', 'arn:aws:victim'],
              ],
              'tenant.calls',
            ),
          ),
          "the runtime's metric names": otlpPost('/v1/metrics', counter([['session.id', own]])),
          'a data point of another session': otlpPost(
            '/v1/metrics',
            counter([['session.id', other]], 'tenant.calls'),
          ),
        };
        for (const [label, script] of Object.entries(attempts))
          expect((await sh('forging', script)).stdout.trim(), label).toBe('403');
        expect((await sh('forging', otlpPost('/v1/traces', spans([], 'signed')))).stdout.trim()).toBe('200');
        const forwarded = received.find((r) => r.path === '/v1/traces' && r.body.includes('signed'));
        expect(forwarded?.authorization).toBe(`Bearer ${INGEST_TOKEN}`);
        expect(received.filter((r) => r.body.includes(other))).toEqual([]);
      },
    );

    it("keeps the runtime's memory bounded under a burst of 64 exports of 15 MiB from one session", async () => {
      await sh('burst', 'true');
      const pid = runtimeProcess!.pid!;
      const before = rssBytes(pid);
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 50);
      // Each export streamed from one 64 KiB chunk: the session's own memory limit is not what stops it.
      const burst = await sh('burst', `node -e '${EXPORT_BURST}'`);
      clearInterval(sampler);
      const statuses = JSON.parse(burst.stdout) as (number | string)[];
      expect(statuses.filter((status) => status === 200)).toEqual([]);
      expect(peak - before).toBeLessThan(100 * 1024 * 1024);
    });

    it('keeps sessionStorage across StopRuntimeSession, removes the rest, and shows it to no other session', async () => {
      const stored = (
        await createReady(clients.control, 'hostile_storage', 'hostile', {
          filesystemConfigurations: [{ sessionStorage: { mountPath: '/mnt/workspace' } }],
        })
      ).agentRuntimeArn!;
      const run = async (session: string, command: string): Promise<Shell> =>
        (await invokeJson(clients.data, stored, sessionId(session), { sh: command })) as Shell;
      const wrote = await run(
        'storage-a',
        'echo kept > /mnt/workspace/notes.txt && echo scratch > "$HOME/scratch.txt" && echo ok',
      );
      expect(wrote.stdout.trim()).toBe('ok');
      await clients.data.send(
        new StopRuntimeSessionCommand({ agentRuntimeArn: stored, runtimeSessionId: sessionId('storage-a') }),
      );
      const after = await run(
        'storage-a',
        'cat /mnt/workspace/notes.txt; cat "$HOME/scratch.txt" 2>/dev/null || echo scratch-gone',
      );
      expect(after.stdout.split('\n').filter(Boolean)).toEqual(['kept', 'scratch-gone']);
      const other = await run('storage-b', 'ls -A /mnt/workspace; echo listed');
      expect(other.stdout.trim()).toBe('listed');
    });

    it.runIf(uid === undefined && !k8s)(
      `keeps session storage within its own volume, off the data dir's disk, across a stop${rootOnly}${gap('the volume is the node’s, sized by its defaults')}`,
      async () => {
        const quota = (
          await createReady(clients.control, 'hostile_quota', 'hostile', {
            filesystemConfigurations: [{ sessionStorage: { mountPath: '/mnt/data' } }],
          })
        ).agentRuntimeArn!;
        const run = async (command: string): Promise<Shell> =>
          (await invokeJson(clients.data, quota, sessionId('quota'), { sh: command })) as Shell;
        const fill = await run(
          'echo kept > /mnt/data/kept.txt; dd if=/dev/zero of=/mnt/data/fill bs=1M count=100 2>&1 | grep -c "No space left"; du -k /mnt/data/fill | cut -f1',
        );
        const [full, sizeKb] = fill.stdout.trim().split('\n').map(Number);
        expect(full).toBe(1);
        expect(sizeKb).toBeLessThanOrEqual(32 * 1024);
        const volumes = join(dataDir, 'session-storage', quota.split('/').pop()!);
        const mounted = () => readFileSync('/proc/self/mountinfo', 'utf8').includes(volumes);
        expect(mounted()).toBe(true);
        await clients.data.send(
          new StopRuntimeSessionCommand({ agentRuntimeArn: quota, runtimeSessionId: sessionId('quota') }),
        );
        await waitFor(() => !mounted(), 5000, 'the storage volume unmounted once its session stopped');
        expect((await run('cat /mnt/data/kept.txt; rm /mnt/data/fill && echo freed')).stdout).toBe(
          'kept\nfreed\n',
        );
      },
    );

    // cgroups need a root runtime here; as an ordinary user the runtime says the limits are off.
    it.runIf(uid === undefined && !k8s)(
      `enforces the memory and process limits with errors naming them${rootOnly}${gap(LIMITS)}`,
      async () => {
        const forks = await sh('limits', 'for i in $(seq 1 100); do sleep 3 & done 2>&1; wait; echo done');
        expect(forks.stdout + forks.stderr).toMatch(/fork|Resource temporarily unavailable|Cannot allocate/i);
        const status = (error: unknown) =>
          (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        const named = (error: unknown) => {
          expect(status(error)).toBe(424);
          expect((error as Error).message).toContain('memory limit of 128 MiB reached');
        };
        const alloc = `node -e "const k=[];for(;;)k.push(Buffer.alloc(8<<20,1))"`;
        const child = await sh('limits', alloc).catch((e: unknown) => e);
        // On gVisor the host's OOM killer can only pick the sandbox's Sentry: the session ends (424);
        // whether the kernel counted an OOM kill by then varies, so the limit is not always named.
        if (oci === 'runsc') expect(status(child)).toBe(424);
        else expect((child as Shell).code).not.toBe(0);
        // The worker itself outgrowing the limit ends the session with a 424 naming the limit.
        named(
          await invokeJson(clients.data, arn, sessionId('limits-worker'), { allocMb: 400 }).catch(
            (e: unknown) => e,
          ),
        );
        // Nothing of the kills lands where the runtime was started (podman's conmon writes `oom`).
        expect(readdirSync(workDir)).toEqual([]);
      },
    );

    it.runIf(uid === undefined && !k8s)(
      `bills usage from the session cgroup: CPU of a process that left the worker tree${rootOnly}${gap('usage is not read from a pod')}`,
      async () => {
        // A burner started with setsid by a shell that exits at once: no longer below the worker in
        // /proc, still in the session's cgroup.
        await sh('usage', 'setsid node -e "while (process.cpuUsage().user < 2e6);" >/dev/null 2>&1 &');
        let session:
          | {
              sessionId: string;
              cpuSeconds: number | null;
              rssBytes: number | null;
              usageSource: string | null;
            }
          | undefined;
        // gVisor's kernel times the burner itself: its 2 s read a little less on the host's cgroup.
        const want = oci === 'runsc' ? 1.8 : 2;
        for (let i = 0; i < 500 && !(session && (session.cpuSeconds ?? 0) >= want); i++) {
          await new Promise((r) => setTimeout(r, 100));
          const res = await fetch(`${url}/local/sessions`);
          const body = (await res.json()) as { sessions: NonNullable<typeof session>[] };
          session = body.sessions.find((s) => s.sessionId === sessionId('usage'));
        }
        expect(session?.usageSource).toBe('cgroup');
        expect(session?.cpuSeconds).toBeGreaterThanOrEqual(want); // the burner's 2 s of CPU time
        expect(session?.rssBytes).toBeGreaterThan(0);
      },
      90_000, // gVisor's ptrace platform makes the burner's 2 s of CPU take longer
    );

    it.runIf(uid !== undefined)(
      `says at start which protections are off and why${uid === undefined ? ' (skipped: a root runtime has them all)' : ''}`,
      () => {
        expect(output).toMatch(
          /isolation: per-session memory, CPU and process limits: cannot create cgroups/,
        );
        expect(output).toMatch(/isolation: outbound network: slirp4netns needs a root runtime/);
      },
    );

    it('refuses loader variables and preloads from outside the artifact in environmentVariables', async () => {
      for (const [name, value] of [
        ['LD_PRELOAD', '/tmp/x.so'],
        ['GCONV_PATH', '/tmp'],
        ['NODE_OPTIONS', '--require /tmp/evil.js'],
        ['NODE_OPTIONS', '--import=../../evil.mjs'],
      ] as const) {
        const created = clients.control.send(
          new CreateAgentRuntimeCommand({
            agentRuntimeName: 'hostile_loader',
            agentRuntimeArtifact: { containerConfiguration: { containerUri: pathToFileURL(FIXTURE).href } },
            roleArn: ROLE_ARN,
            networkConfiguration: { networkMode: 'PUBLIC' },
            environmentVariables: { [name]: value },
          }),
        );
        await expect(created).rejects.toThrow(new RegExp(`environmentVariables\\.${name}`));
      }
    });

    it("runs no program from a PATH in the runtime's environmentVariables, nor from an empty PATH element", () =>
      expectNoPlantedHelperRuns(clients, root));

    it('gains nothing by planting helpers where the runtime PATH points inside its own view', async () => {
      const sid = sessionId('planted-view');
      const planted = await sh('planted-view', plantInSession(evilBin));
      expect(planted.stdout.trim()).toBe(String(HELPER_NAMES.length));
      const command = await runCommand(clients.data, arn, sid, 'id -u; grep CapEff /proc/self/status');
      expect(command.stdout.split('\n')[0]).not.toBe('0');
      expect(command.stdout).toMatch(/CapEff:\s+0000000000000000/);
      const ran = await sh('planted-view', `cat ${evilBin}/ran-* 2>/dev/null; echo end`);
      expect(ran.stdout).toBe('end\n');
    });

    it("reaches neither the metadata address nor this host's other addresses", async () => {
      const port = (exposed.address() as AddressInfo).port;
      const address = hostAddress();
      const targets = [
        ...(metadataAdded ? [`http://${METADATA_IP}:${port}/`] : []),
        ...(address ? [`http://${address}:${port}/`] : []),
      ];
      expect(targets.length).toBeGreaterThan(0);
      const script = targets
        .map(
          (target) =>
            `node -e "fetch('${target}',{signal:AbortSignal.timeout(3000)}).then(r=>r.text()).then(t=>console.log('OPEN ${target} '+t),e=>console.log('CLOSED ${target} '+(e.cause?.code??e.name)))"`,
        )
        .join('; ');
      const out = await sh('egress', script);
      for (const target of targets) expect(out.stdout).toContain(`CLOSED ${target}`);
    });

    it.skipIf(k8s)(
      `keeps scratch files (/tmp and HOME) within the session disk budget, off the host disk${gap(LIMITS)}`,
      async () => {
        const out = await sh(
          'disk',
          'dd if=/dev/zero of=/tmp/fill bs=1M count=200 2>&1 | grep -c "No space left on device"; ' +
            'dd if=/dev/zero of="$HOME/fill" bs=1M count=200 2>&1 | grep -c "No space left on device"; ' +
            'du -k /tmp/fill "$HOME/fill" | cut -f1',
        );
        const [tmpFull, homeFull, ...sizesKb] = out.stdout.trim().split('\n').map(Number);
        expect([tmpFull, homeFull]).toEqual([1, 1]);
        expect(sizesKb.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(64 * 1024);
      },
    );

    it(`holds the runtime's memory while a caller does not read a command's output`, async () => {
      const sid = sessionId('slow-reader');
      await sh('slow-reader', 'true');
      const pid = runtimeProcess!.pid!;
      const before = rssBytes(pid);
      const abort = new AbortController();
      const out = await clients.data.send(
        new InvokeAgentRuntimeCommandCommand({
          agentRuntimeArn: arn,
          runtimeSessionId: sid,
          body: { command: 'head -c 3000000000 /dev/zero | base64', timeout: 60 },
        }),
        { abortSignal: abort.signal },
      );
      expect(out.stream).toBeDefined(); // never read
      let peak = before;
      for (let i = 0; i < 40; i++) {
        await new Promise((r) => setTimeout(r, 100));
        peak = Math.max(peak, rssBytes(pid));
      }
      abort.abort();
      expect(peak - before).toBeLessThan(96 * 1024 * 1024);
    });

    // On gVisor a command over the memory limit ends the whole session (the host's OOM killer can only
    // pick the sandbox's Sentry), and its processes cannot be told apart from outside: not run there.
    it.runIf(uid === undefined && oci !== 'runsc' && !k8s)(
      `holds commands to the session's memory, process and CPU limits and ends what they leave behind${rootOnly}${gap(LIMITS)}${uid === undefined && oci === 'runsc' ? ' (skipped: on gVisor such a command ends the whole session)' : ''}`,
      async () => {
        const sid = sessionId('cmd-limits');
        await sh('cmd-limits', 'true');
        const memory = await runCommand(
          clients.data,
          arn,
          sid,
          'node -e "const k=[];for(let i=0;i<100;i++)k.push(Buffer.alloc(10<<20,1));console.log(\'allocated\')"',
        );
        expect(memory.stdout).not.toContain('allocated');
        expect(memory.stop?.exitCode).not.toBe(0);
        const forks = await runCommand(
          clients.data,
          arn,
          sid,
          'for i in $(seq 1 200); do sleep 3 & done; wait',
        );
        expect(forks.stderr).toMatch(/fork|Resource temporarily unavailable/i);
        const left = await runCommand(
          clients.data,
          arn,
          sid,
          'setsid sleep 300 & echo started; sleep 600',
          2,
        );
        expect(left.stop?.status).toBe('TIMED_OUT');
        const count =
          'for f in /proc/[0-9]*/cmdline; do tr "\\0" " " < $f; echo; done | grep -c "sleep 30[0]"';
        await waitFor(
          async () => (await sh('cmd-limits', count)).stdout.trim() === '0',
          5000,
          'setsid child ended',
        );
        await runCommand(clients.data, arn, sid, 'node -e "while (process.cpuUsage().user < 2e6);"');
        const res = await fetch(`${url}/local/sessions`);
        const body = (await res.json()) as { sessions: { sessionId: string; cpuSeconds: number | null }[] };
        expect(body.sessions.find((s) => s.sessionId === sid)?.cpuSeconds).toBeGreaterThanOrEqual(2);
      },
      90_000, // 1 GB of allocations, 200 forks and 2 s of CPU under the session's limits: 28 s on a loaded 2-core machine
    );

    // Last: it restarts the runtime.
    it('leaves no session folder behind a runtime killed with SIGKILL once it starts again', async () => {
      await Promise.all(['crash-a', 'crash-b', 'crash-c'].map((label) => sh(label, 'true')));
      const sessionsDir = join(dataDir, 'sessions');
      expect(readdirSync(sessionsDir).length).toBeGreaterThanOrEqual(3);
      runtimeProcess!.kill('SIGKILL');
      await new Promise((r) => runtimeProcess!.once('exit', r));
      clients.control.destroy();
      clients.data.destroy();
      await startRuntimeProcess();
      expect(readdirSync(sessionsDir).filter((name) => name !== 'owner.pid')).toEqual([]);
    });
  },
);

// Without a sandbox (a developer's machine, trusted agents) the helpers still run by absolute path
// with their own environment, and workers still listen on loopback only.
describe('hostile agent in process-group mode (AGENTRT_ISOLATION=unsafe-process)', () => {
  const root = mkdtempSync(join(os.tmpdir(), 'agentrt-hostile-pg-'));
  let runtimeProcess: ChildProcess | undefined;
  let clients: ReturnType<typeof sdkClients>;

  beforeAll(async () => {
    chmodSync(root, 0o755);
    let output = '';
    runtimeProcess = spawn(process.execPath, [main], {
      env: {
        PATH: process.env.PATH,
        HOME: root,
        AGENTRT_RUNTIME_PORT: '0',
        AGENTRT_DATA_DIR: join(root, 'data'),
        AGENTRT_ISOLATION: 'unsafe-process',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    runtimeProcess.stdout!.on('data', (c: Buffer) => (output += c.toString('utf8')));
    await waitFor(() => output.includes('runtime listening'), 20_000, 'runtime listening');
    const line = output.split('\n').find((l) => l.includes('runtime listening'))!;
    clients = sdkClients((JSON.parse(line) as { url: string }).url);
  }, 60_000);

  afterAll(() => {
    clients?.control.destroy();
    clients?.data.destroy();
    runtimeProcess?.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });

  it('binds a worker that would listen on every interface to loopback', async () => {
    const arn = (await createReady(clients.control, 'hostile_pg', 'hostile')).agentRuntimeArn!;
    const address = await invokeJson(clients.data, arn, sessionId('pg-address'), { address: true });
    expect(address.address).toBe('127.0.0.1');
  });

  it("runs no program from a PATH in the runtime's environmentVariables, nor from an empty PATH element", () =>
    expectNoPlantedHelperRuns(clients, root));
});

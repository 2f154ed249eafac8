// The hostile-agent suite: an agent that runs whatever shell command the test sends it, inside a real
// session of the runnable service (dist/main.js), started as root and as an ordinary user. Each check
// is what an attacker controlling that agent would try; each must fail, except the allowed paths.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type IncomingMessage, type Server, createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StopRuntimeSessionCommand } from '@aws-sdk/client-bedrock-agentcore';
import { createReady, invokeJson, sdkClients, sessionId, waitFor } from '../test-support.js';

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

const variants = [
  { label: 'runtime running as root', uid: undefined as number | undefined },
  { label: `runtime running as uid ${USER_UID}`, uid: USER_UID },
].filter((v) => v.uid === undefined || userCanRead);

describe.runIf(canSandbox && isRoot && !userCanRead)(
  `hostile agent, runtime running as uid ${USER_UID}`,
  () => {
    it.skip(`skipped: uid ${USER_UID} cannot read ${main} (a folder above it is closed to other users)`, () => {});
  },
);

describe.skipIf(!canSandbox).each(variants)('hostile agent in a sandboxed session, $label', ({ uid }) => {
  const root = mkdtempSync(join(os.tmpdir(), 'agentrt-hostile-'));
  const fakeHome = join(root, 'home');
  const dataDir = join(root, 'data');
  const canary = `canary-${Math.random().toString(36).slice(2)}`;
  let runtimeProcess: ChildProcess | undefined;
  let url = '';
  let arn = '';
  let clients: ReturnType<typeof sdkClients>;
  const received: { path: string; body: string }[] = [];
  const otlp = createServer((req, res) => {
    void readBody(req).then((body) => {
      received.push({ path: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  const allowed = createServer((_req, res) => res.end('hello from an allowlisted host port'));
  const forbidden = createServer((_req, res) => res.end('this host port must stay closed'));
  let ports = { otlp: 0, allowed: 0, forbidden: 0 };
  let output = '';

  const sh = async (session: string, command: string): Promise<Shell> =>
    (await invokeJson(clients.data, arn, sessionId(session), { sh: command })) as Shell;

  beforeAll(async () => {
    mkdirSync(join(fakeHome, '.aws'), { recursive: true });
    writeFileSync(join(fakeHome, '.aws', 'credentials'), canary);
    mkdirSync(dataDir);
    if (uid !== undefined) {
      for (const dir of [root, fakeHome, dataDir]) chownSync(dir, uid, uid);
      chmodSync(root, 0o755);
    }
    ports = { otlp: await listen(otlp), allowed: await listen(allowed), forbidden: await listen(forbidden) };
    const argv = [
      ...(uid === undefined ? [] : ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--']),
      process.execPath,
      main,
    ];
    runtimeProcess = spawn(argv[0]!, argv.slice(1), {
      env: {
        PATH: process.env.PATH,
        HOME: fakeHome,
        AGENTRT_RUNTIME_PORT: '0',
        AGENTRT_DATA_DIR: dataDir,
        AGENTRT_SANDBOX_HOST_PORTS: String(ports.allowed),
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${ports.otlp}`,
        AGENTRT_ISOLATION: 'bwrap',
        AGENTRT_SESSION_MEMORY_MB: '128',
        AGENTRT_SESSION_PIDS: '64',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    runtimeProcess.stdout!.on('data', (c: Buffer) => (output += c.toString('utf8')));
    await waitFor(() => output.includes('runtime listening'), 20_000, 'runtime listening');
    url = (JSON.parse(output.split('\n').find((l) => l.includes('runtime listening'))!) as { url: string })
      .url;
    clients = sdkClients(url);
    arn = (await createReady(clients.control, 'hostile', 'hostile')).agentRuntimeArn!;
  }, 60_000);

  afterAll(() => {
    clients?.control.destroy();
    clients?.data.destroy();
    runtimeProcess?.kill('SIGKILL');
    for (const server of [otlp, allowed, forbidden]) server.close();
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
    expect(out.stdout).toMatch(/NoNewPrivs:\s+1/);
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
    const a = await sh('session-a', 'echo secret-of-a > "$HOME/secret"; echo "$HOME"; ls -d /run/agentrt/*');
    const home = a.stdout.split('\n')[0]!;
    const b = await sh('session-b', `cat ${home}/secret; ls ${join(dataDir, 'sessions')}`);
    expect(b.stdout).not.toContain('secret-of-a');
    expect(b.stderr).toContain('No such file or directory');
    // It sees its own session folder only.
    expect(b.stdout.trim().split('\n')).toHaveLength(1);
    expect(b.stdout).not.toContain(home.split('/').at(-2));
    // Only its own worker socket exists in its bridge dir; the worker port is its own loopback.
    expect(a.stdout).toContain('/run/agentrt/worker.sock');
  });

  it('cannot reach the runtime API, the collector or other host ports; reaches the allowlisted one', async () => {
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
  });

  it('sends telemetry only as itself: the relay stamps its session and refuses spans claiming another', async () => {
    const post = (resourceSession: string | undefined) => {
      const attributes = resourceSession
        ? [{ key: 'session.id', value: { stringValue: resourceSession } }]
        : [];
      const body = JSON.stringify({
        resourceSpans: [
          {
            resource: { attributes },
            scopeSpans: [
              {
                scope: { name: 'hostile' },
                spans: [{ name: 'forged', traceId: '0'.repeat(32), spanId: '1'.repeat(16) }],
              },
            ],
          },
        ],
      });
      return `node -e 'fetch("http://127.0.0.1:4318/v1/traces",{method:"POST",headers:{"content-type":"application/json"},body:${JSON.stringify(body)}}).then(r=>console.log(r.status))'`;
    };
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

  // cgroups need a root runtime here; as an ordinary user the runtime says the limits are off.
  it.runIf(uid === undefined)('enforces the memory and process limits with errors naming them', async () => {
    const forks = await sh('limits', 'for i in $(seq 1 100); do sleep 3 & done 2>&1; wait; echo done');
    expect(forks.stdout + forks.stderr).toMatch(/fork|Resource temporarily unavailable|Cannot allocate/i);
    const child = await sh('limits', `node -e "const k=[];for(;;)k.push(Buffer.alloc(8<<20,1))"`);
    expect(child.code).not.toBe(0);
    // The worker itself outgrowing the limit ends the session with a 424 naming the limit.
    const error = await invokeJson(clients.data, arn, sessionId('limits'), { allocMb: 400 }).catch(
      (e: unknown) => e as Error & { $metadata?: { httpStatusCode?: number } },
    );
    expect((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode).toBe(424);
    expect((error as Error).message).toContain('memory limit of 128 MiB reached');
  });

  it.runIf(uid === undefined)(
    'bills usage from the session cgroup: CPU of a process that left the worker tree',
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
      for (let i = 0; i < 300 && !(session && (session.cpuSeconds ?? 0) >= 2); i++) {
        await new Promise((r) => setTimeout(r, 100));
        const res = await fetch(`${url}/local/sessions`);
        const body = (await res.json()) as { sessions: NonNullable<typeof session>[] };
        session = body.sessions.find((s) => s.sessionId === sessionId('usage'));
      }
      expect(session?.usageSource).toBe('cgroup');
      expect(session?.cpuSeconds).toBeGreaterThanOrEqual(2); // the burner's 2 s of CPU time
      expect(session?.rssBytes).toBeGreaterThan(0);
    },
  );

  it.runIf(uid !== undefined)('says at start which protections are off and why', () => {
    expect(output).toMatch(/isolation: per-session memory, CPU and process limits: cannot create cgroups/);
    expect(output).toMatch(/isolation: outbound network: slirp4netns needs a root runtime/);
  });
});

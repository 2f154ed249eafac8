import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@agentrt/kit';
import { type CliProcess, groupAlive, processesMentioning, startCli } from './dev-process.js';
import { readmeBlocks } from './readme-commands.js';
import { repoRoot } from './repo.js';

const run = promisify(execFile);

interface DevState {
  pid: number;
  urls: Record<string, string>;
  services: { name: string; pid: number; logFile: string }[];
  runtimes: { name: string; id: string; arn: string; reused: boolean }[];
  sessionId: string;
  demo?: { name: string; ok: boolean; status: number; sessionId: string; detail: string }[];
}

// Generous: on a loaded 2-core machine the weather service alone (3 processes loading the
// instrumentation and the agent SDK) can take minutes to come up.
const STARTUP_MS = 300_000;

/**
 * `agentrt dev --demo` from dist, from a clean data directory, on free ports: the whole stack comes
 * up, the demo traffic is queryable in the collector, the README's commands work against it, SIGTERM
 * stops everything with no process left, and a second start reuses the data directory.
 */
describe('agentrt dev (end to end)', () => {
  let dataDir: string;
  let ports: { collector: number; runtime: number; weather: number; weatherApi: number };
  const marker = `agentrt-e2e-${randomUUID()}`;
  let env: NodeJS.ProcessEnv;
  let dev: CliProcess | undefined;
  let state: DevState;

  const args = () => [
    'dev',
    '--data-dir',
    dataDir,
    '--collector-port',
    String(ports.collector),
    '--runtime-port',
    String(ports.runtime),
    '--weather-port',
    String(ports.weather),
    '--weather-api-port',
    String(ports.weatherApi),
    '--stop-grace-ms',
    '5000',
    '--ready-timeout-ms',
    String(STARTUP_MS - 20_000),
  ];

  async function readState(): Promise<DevState> {
    return JSON.parse(await readFile(join(dataDir, 'dev-state.json'), 'utf8')) as DevState;
  }

  async function stop(process: CliProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    process.child.kill('SIGTERM');
    return process.exited;
  }

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'agentrt-dev-e2e-'));
    ports = {
      collector: await freePort(),
      runtime: await freePort(),
      weather: await freePort(),
      weatherApi: await freePort(),
    };
    env = {
      ...process.env,
      AGENTRT_E2E_MARKER: marker,
      CI: '1',
      AGENTRT_MODEL_PROVIDER: 'offline',
      NODE_OPTIONS: '',
    };
    for (const name of [
      'AWS_ACCESS_KEY_ID',
      'AWS_PROFILE',
      'OPENAI_API_KEY',
      'WEATHER_API_BASE_URL',
      'AGENTRT_DATA_DIR',
    ]) {
      delete env[name];
    }
    dev = startCli([...args(), '--demo'], env);
    await dev.waitFor(/agentrt dev is running\./, STARTUP_MS);
    state = await readState();
  }, STARTUP_MS + 10_000);

  afterAll(async () => {
    if (dev && dev.child.exitCode === null) {
      dev.child.kill('SIGKILL');
      await dev.exited;
    }
    // Anything left behind by a failed run is killed here so it cannot outlive the test.
    for (const pid of await processesMentioning([marker, dataDir])) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await rm(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('starts every service healthy, on the ports it was given', async () => {
    expect(dev!.child.exitCode, `agentrt dev is still running; its output:\n${dev!.output()}`).toBeNull();
    expect(state.services.map((s) => s.name).sort()).toEqual([
      'collector',
      'runtime',
      'weather',
      'weather-api',
    ]);
    expect(state.urls).toMatchObject({
      collector: `http://127.0.0.1:${ports.collector}`,
      runtime: `http://127.0.0.1:${ports.runtime}`,
      weather: `http://127.0.0.1:${ports.weather}`,
      'weather-api': `http://127.0.0.1:${ports.weatherApi}`,
    });
    expect((await fetch(`${state.urls['collector']}/healthz`)).status).toBe(200);
    expect((await fetch(`${state.urls['weather']}/health`)).status).toBe(200);
    const list = (await (await fetch(`${state.urls['runtime']}/runtimes/`, { method: 'POST' })).json()) as {
      agentRuntimes: { agentRuntimeName: string; status: string }[];
    };
    expect(list.agentRuntimes.map((r) => [r.agentRuntimeName, r.status]).sort()).toEqual([
      ['custom_agent', 'READY'],
      ['sdk_agent', 'READY'],
      ['weather_a2a', 'READY'],
      ['weather_mcp', 'READY'],
    ]);
    const ui = await fetch(`${state.urls['collector']}/`);
    expect(ui.headers.get('content-type')).toMatch(/text\/html/);
    const out = dev!.output();
    for (const line of [
      '✔ collector',
      '✔ weather service',
      '✔ hosting runtime',
      'npx agentrt invoke sdk_agent',
      'curl -sS',
    ]) {
      expect(out).toContain(line);
    }
    expect(out).toContain(`http://127.0.0.1:${ports.collector}/#/sessions/${state.sessionId}`);
  }, 120_000);

  it('sent the demo traffic, and its sessions and traces are queryable in the collector', async () => {
    expect(state.demo?.map((d) => [d.name, d.ok, d.detail])).toEqual(
      state.demo?.map((d) => [d.name, true, d.detail]),
    );
    expect(state.demo?.length).toBe(8);
    // The second turn of the multi-turn session remembers the first (the agent keeps the session's turns).
    expect(state.demo!.find((d) => d.name.startsWith('multi-turn session, turn 2'))!.detail).toBe(
      '200 Your name is Ada: you told me earlier in this session.',
    );
    const collector = state.urls['collector']!;
    const multi = state.demo!.find((d) => d.name.startsWith('multi-turn'))!.sessionId;
    const stream = state.demo!.find((d) => d.name.startsWith('streaming'))!.sessionId;
    const failing = state.demo!.find((d) => d.name.startsWith('failing tool'))!.sessionId;
    // Exporters batch; poll until the two turns of the multi-turn session are both in.
    await expect
      .poll(
        async () => {
          const res = await fetch(`${collector}/api/sessions/${encodeURIComponent(multi)}`);
          if (!res.ok) return 0;
          const session = (await res.json()) as { traceCount?: number; traces?: unknown[] };
          return session.traceCount ?? session.traces?.length ?? 0;
        },
        { timeout: 60_000, interval: 500 },
      )
      .toBeGreaterThanOrEqual(2);
    for (const sessionId of [stream, failing]) {
      await expect
        .poll(
          async () => {
            const res = await fetch(`${collector}/api/query`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ query: `filter attributes.session.id = "${sessionId}" | limit 100` }),
            });
            const body = (await res.json()) as { rows?: unknown[] };
            return body.rows?.length ?? 0;
          },
          { timeout: 60_000, interval: 500 },
        )
        .toBeGreaterThan(0);
    }
    // The failing tool shows as an error in its session (the tool span's status), as the UI lists it.
    await expect
      .poll(
        async () => {
          const res = await fetch(`${collector}/api/sessions/${encodeURIComponent(failing)}`);
          return res.ok ? ((await res.json()) as { session: { errorCount: number } }).session.errorCount : 0;
        },
        { timeout: 60_000, interval: 500 },
      )
      .toBeGreaterThan(0);
    const sessions = (await (await fetch(`${collector}/api/sessions`)).json()) as {
      sessions: { sessionId?: string; id?: string }[];
    };
    const ids = sessions.sessions.map((s) => s.sessionId ?? s.id);
    expect(ids).toEqual(expect.arrayContaining([multi, stream, failing]));
  }, 120_000);

  it("runs the README's running-stack commands as written (ports moved to this run's)", async () => {
    const bin = join(repoRoot, 'node_modules', '.bin');
    const commandEnv = {
      ...env,
      PATH: `${bin}:${join(process.execPath, '..')}:${process.env['PATH']}`,
      AGENTRT_RUNTIME_URL: state.urls['runtime'],
      AGENTRT_COLLECTOR_URL: state.urls['collector'],
    };
    const moved = (line: string) =>
      line
        .replaceAll('127.0.0.1:4318', `127.0.0.1:${ports.collector}`)
        .replaceAll('127.0.0.1:8787', `127.0.0.1:${ports.runtime}`)
        .replaceAll('127.0.0.1:8000', `127.0.0.1:${ports.weather}`);
    // The "Develop an agent" blocks edit examples/custom-agent/src in the checkout and put it back:
    // readme-run.test.ts runs them, and two stacks editing one checkout at once would each restore
    // the other's edit. Every other running-stack block runs here too, with its ports moved.
    const editsCheckout = (b: { commands: string[] }) =>
      b.commands.some((c) => c.includes('/tmp/app.ts.orig'));
    const blocks = readmeBlocks().filter((b) => b.marker === 'running-stack' && !editsCheckout(b));
    expect(blocks.length).toBeGreaterThan(0);
    for (const line of blocks.flatMap((b) => b.commands)) {
      // Commands that read telemetry may run before the exporters' batch has landed: retry those.
      const readsTelemetry = /agentrt (sessions|traces)\b|\/api\//.test(line);
      const deadline = Date.now() + (readsTelemetry ? 60_000 : 0);
      let result: { code?: number; stdout?: string; stderr?: string };
      for (;;) {
        result = await run('bash', ['-c', moved(line)], {
          cwd: repoRoot,
          env: commandEnv,
          timeout: 90_000,
        }).catch((error: { code?: number; stdout?: string; stderr?: string }) => error);
        if (!('code' in result) || Date.now() > deadline) break;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      expect(result, `${moved(line)}\n${JSON.stringify(result)}`).not.toHaveProperty('code');
      // A command prints what it did, unless its output goes to a file (`… > /tmp/rules.json`).
      if (!/>\s*\S+$/.test(line)) expect(result.stdout?.trim().length, moved(line)).toBeGreaterThan(0);
    }
  }, 300_000);

  it('refuses to start on a port in use, naming the port and how to move it', async () => {
    const blocker: Server = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    try {
      const other = await mkdtemp(join(tmpdir(), 'agentrt-dev-e2e-busy-'));
      const busy = startCli(
        [
          'dev',
          '--data-dir',
          other,
          '--collector-port',
          String(port),
          '--runtime-port',
          String(await freePort()),
          '--weather-port',
          String(await freePort()),
        ],
        env,
      );
      const { code } = await busy.exited;
      expect(code).toBe(1);
      expect(busy.output()).toContain(`port ${port} (collector) is in use by pid ${process.pid}`);
      expect(busy.output()).toContain('--collector-port <port> or AGENTRT_COLLECTOR_PORT=<port>');
      await rm(other, { recursive: true, force: true });
    } finally {
      blocker.close();
    }
  }, 120_000);

  it('stops everything on SIGTERM: services, their workers and the session workers, no orphans', async () => {
    const before = await processesMentioning([marker, dataDir]);
    // The collector, the fixture, the weather primary + 2 workers, the runtime and its session workers.
    expect(before.length).toBeGreaterThanOrEqual(state.services.length + 2);
    const { code, signal } = await stop(dev!);
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(dev!.output()).toContain('agentrt dev: stopped.');
    for (const service of state.services) expect(groupAlive(service.pid), service.name).toBe(false);
    await expect.poll(() => processesMentioning([marker, dataDir]), { timeout: 10_000 }).toEqual([]);
    await expect(readFile(join(dataDir, 'dev-state.json'), 'utf8')).rejects.toThrow(/ENOENT/);
  }, 120_000);

  it(
    'a second start reuses the data directory: same runtimes, earlier sessions still there',
    async () => {
      const first = state;
      dev = startCli(args(), env);
      await dev.waitFor(/agentrt dev is running\./, STARTUP_MS);
      const second = await readState();
      expect(second.runtimes.map((r) => [r.name, r.id, r.reused])).toEqual(
        first.runtimes.map((r) => [r.name, r.id, true]),
      );
      expect(dev.output()).toContain(
        'sdk_agent (reused), custom_agent (reused), weather_mcp (reused), weather_a2a (reused)',
      );
      const multi = first.demo!.find((d) => d.name.startsWith('multi-turn'))!.sessionId;
      expect(
        (await fetch(`${second.urls['collector']}/api/sessions/${encodeURIComponent(multi)}`)).status,
      ).toBe(200);
      const { code } = await stop(dev);
      expect(code).toBe(0);
      await expect.poll(() => processesMentioning([marker, dataDir]), { timeout: 10_000 }).toEqual([]);
    },
    STARTUP_MS + 30_000,
  );
});

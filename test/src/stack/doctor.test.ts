import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '@agentrt/cli';
import { type Collector, createCollector } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@agentrt/kit';

interface DoctorReport {
  ok: boolean;
  checks: { name: string; status: 'ok' | 'warn' | 'fail'; detail: string; fix?: string }[];
}

async function doctor(
  env: NodeJS.ProcessEnv,
  args: string[] = [],
): Promise<{ code: number; report: DoctorReport; text: string }> {
  let out = '';
  const code = await main(['doctor', '--json', '--timeout-ms', '10000', ...args], {
    stdout: (t) => (out += t),
    stderr: (t) => (out += t),
    env,
    cwd: process.cwd(),
  });
  return { code, report: JSON.parse(out) as DoctorReport, text: out };
}

const check = (report: DoctorReport, name: string) => report.checks.find((c) => c.name === name);

/** `agentrt doctor` against a real collector on a real port, and against what is missing. */
describe('agentrt doctor', () => {
  let dataDir: string;
  let collector: Collector;
  const quietPorts = async () => ({
    AGENTRT_COLLECTOR_PORT: String(await freePort()),
    AGENTRT_RUNTIME_PORT: String(await freePort()),
    AGENTRT_WEATHER_PORT: String(await freePort()),
  });

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'agentrt-doctor-'));
    collector = await createCollector({ dataDir, host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await collector.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('sends a test span to the collector and reads it back through the query API', async () => {
    const { code, report } = await doctor({
      ...(await quietPorts()),
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    });
    expect(code).toBe(0);
    expect(report.ok).toBe(true);
    expect(check(report, 'collector')).toMatchObject({ status: 'ok' });
    expect(check(report, 'collector')?.detail).toMatch(/test span stored and queried back in \d+ ms/);
    // The round trip is marked synthetic: kept out of the user's trace list, listed on request.
    const list = async (query: string) =>
      (
        (await (await fetch(`${collector.url}/api/traces?service=agentrt-doctor${query}`)).json()) as {
          traces: { rootName: string; noise?: string }[];
        }
      ).traces;
    expect(await list('')).toEqual([]);
    const all = await list('&noise=include');
    expect(all.length).toBeGreaterThan(0);
    expect(all[0]).toMatchObject({ rootName: 'agentrt doctor round trip', noise: 'synthetic' });
    let out = '';
    const io = {
      stdout: (t: string) => (out += t),
      stderr: (t: string) => (out += t),
      env: {},
      cwd: process.cwd(),
    };
    await main(['traces', 'list', '--service', 'agentrt-doctor', '--url', collector.url], io);
    expect(out).not.toContain('agentrt doctor round trip');
    await main(['traces', 'list', '--all', '--service', 'agentrt-doctor', '--url', collector.url], io);
    expect(out).toContain('agentrt doctor round trip');
    expect(check(report, 'node')).toMatchObject({ status: 'ok' });
    expect(check(report, 'model')).toMatchObject({ status: 'ok' });
    expect(report.checks.map((c) => c.name)).toEqual(
      expect.arrayContaining(['node', 'build', 'collector', 'telemetry', 'model', 'bwrap', 'docker']),
    );
  });

  it('fails (exit 1) when the configured collector cannot be reached, and says what to do', async () => {
    const { code, report } = await doctor({
      ...(await quietPorts()),
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await freePort()}`,
    });
    expect(code).toBe(1);
    expect(check(report, 'collector')).toMatchObject({ status: 'fail' });
    expect(check(report, 'collector')?.fix).toMatch(/OTEL_EXPORTER_OTLP_ENDPOINT/);
  });

  it('flags settings that silently turn telemetry off, and credentials that do not match the provider', async () => {
    const { code, report } = await doctor({
      ...(await quietPorts()),
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_SDK_DISABLED: 'true',
      AGENTRT_MODEL_PROVIDER: 'bedrock',
    });
    expect(code).toBe(1);
    expect(check(report, 'telemetry')).toMatchObject({ status: 'warn', fix: 'Unset OTEL_SDK_DISABLED.' });
    expect(check(report, 'model')).toMatchObject({ status: 'fail' });
    expect(check(report, 'model')?.detail).toContain('no AWS credentials');
  });

  it('names a port held by another program and the setting that moves the service', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const { code, report } = await doctor({
        ...(await quietPorts()),
        AGENTRT_RUNTIME_PORT: String(port),
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      });
      expect(code).toBe(0); // a busy port is a warning: the stack can be moved
      const busy = check(report, `port ${port}`);
      expect(busy?.status).toBe('warn');
      expect(busy?.detail).toContain(`pid ${process.pid}`);
      expect(busy?.fix).toContain('--runtime-port <port> (or AGENTRT_RUNTIME_PORT=<port>)');
    } finally {
      blocker.close();
    }
  });

  it('recognises the port of a running agentrt collector as its own', async () => {
    const { report } = await doctor({
      ...(await quietPorts()),
      AGENTRT_COLLECTOR_PORT: String(collector.port),
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    });
    expect(check(report, `port ${collector.port}`)).toMatchObject({
      status: 'ok',
      detail: 'in use by the agentrt collector (running)',
    });
  });

  it('prints readable lines without --json', async () => {
    let out = '';
    const code = await main(['doctor'], {
      stdout: (t) => (out += t),
      stderr: (t) => (out += t),
      env: { ...(await quietPorts()), OTEL_EXPORTER_OTLP_ENDPOINT: collector.url },
      cwd: process.cwd(),
    });
    expect(code).toBe(0);
    expect(out).toMatch(/^✔ node\s+v\d+/m);
    expect(out).toMatch(/^\d+ ok, \d+ warnings, 0 problems$/m);
  });

  it('rejects an unknown flag as a usage error', async () => {
    let err = '';
    const code = await main(['doctor', '--frobnicate'], {
      stdout: () => {},
      stderr: (t) => (err += t),
      env: {},
      cwd: '.',
    });
    expect(code).toBe(2);
    expect(err).toContain("Unknown option '--frobnicate'");
  });
});

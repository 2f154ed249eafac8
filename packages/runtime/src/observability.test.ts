import { spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type TestRuntime,
  createReady,
  fixtureUri,
  invokeJson,
  sdkClients,
  sessionId,
  startRuntime,
  waitFor,
} from './test-support.js';

interface OtlpLogBody {
  resourceLogs: {
    scopeLogs: {
      logRecords: {
        body: { stringValue: string };
        attributes: { key: string; value: { stringValue?: string } }[];
      }[];
    }[];
  }[];
}

describe('worker logs and telemetry', () => {
  let rt: TestRuntime;
  let instrumented: TestRuntime;
  let receiver: Server;
  const received: OtlpLogBody[] = [];
  let fromWorkers = 0;
  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        const fromRuntime =
          req.headers['content-type'] === 'application/json' && body.includes('"agentrt-runtime"');
        if (req.url?.startsWith('/v1/') && !fromRuntime) fromWorkers++;
        // The runtime posts JSON; instrumented workers may post protobuf to the same receiver.
        if (req.url === '/v1/logs' && req.headers['content-type'] === 'application/json')
          received.push(JSON.parse(body) as OtlpLogBody);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    rt = await startRuntime({ otlpEndpoint: endpoint, otlpProtocol: 'http/json' });
  });
  afterAll(async () => {
    await Promise.all([rt?.close(), instrumented?.close()]);
    await new Promise<void>((r) => receiver.close(() => r()));
  }, 30_000);

  it('logs worker output as JSON lines tagged with the session and exports them as OTLP logs', async () => {
    const runtime = await createReady(rt.control, 'chatty', 'counter');
    const sid = sessionId('chatty');
    const out = (await invokeJson(rt.data, runtime.agentRuntimeArn!, sid, {})) as {
      env: Record<string, string>;
    };
    expect(out.env.OTEL_EXPORTER_OTLP_ENDPOINT).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await waitFor(
      () => rt.logs.some((l) => String(l.msg).startsWith('counter listening') && l.sessionId === sid),
      5000,
      'JSON log line',
    );
    const line = rt.logs.find((l) => String(l.msg).startsWith('counter listening'))!;
    expect(line).toMatchObject({
      level: 'info',
      stream: 'stdout',
      runtimeId: runtime.agentRuntimeId,
      sessionId: sid,
    });
    await waitFor(
      () =>
        received.some((b) =>
          b.resourceLogs[0]!.scopeLogs[0]!.logRecords.some(
            (r) =>
              r.body.stringValue.startsWith('counter listening') &&
              r.attributes.some((a) => a.key === 'session.id' && a.value.stringValue === sid),
          ),
        ),
      10_000,
      'OTLP log record with session.id',
    );
  });

  it('preloads @agentrt/instrument into node workers when asked', async () => {
    instrumented = await startRuntime({
      otlpEndpoint: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
      otlpProtocol: 'http/json',
      instrumentWorkers: true,
    });
    const runtime = await createReady(instrumented.control, 'instrumented', 'counter');
    const out = (await invokeJson(
      instrumented.data,
      runtime.agentRuntimeArn!,
      sessionId('instrumented'),
      {},
    )) as {
      env: Record<string, string>;
    };
    const warned = instrumented.logs.some((l) =>
      String(l.msg).includes('@agentrt/instrument is not resolvable'),
    );
    if (warned) expect(out.env.NODE_OPTIONS).toBeUndefined();
    else {
      expect(out.env.NODE_OPTIONS).toMatch(/--require \S+instrument\S+\.js/);
      // Only workers send traces: the preloaded SDK exported the invocation's spans here.
      // The preloaded SDK exports the worker's own telemetry (its console output at least) to the
      // same endpoint; the runtime's own exports are JSON from service agentrt-runtime.
      await waitFor(() => fromWorkers > 0, 20_000, 'telemetry exported by the instrumented worker');
    }
  });

  it('preloads it into workers of an artifact outside the checkout, whose folders hold no node_modules', async () => {
    // The launcher's own dependencies must be visible in the sandbox, not only the launcher.
    const outside = mkdtempSync(join(os.tmpdir(), 'agentrt-outside-'));
    try {
      chmodSync(outside, 0o755);
      cpSync(fileURLToPath(fixtureUri('counter')), outside, { recursive: true });
      const runtime = await createReady(instrumented!.control, 'instrumented_outside', 'counter', {
        agentRuntimeArtifact: { containerConfiguration: { containerUri: pathToFileURL(outside).href } },
      });
      const out = (await invokeJson(
        instrumented!.data,
        runtime.agentRuntimeArn!,
        sessionId('outside'),
        {},
      )) as {
        env: Record<string, string>;
      };
      expect(out.env.NODE_OPTIONS).toMatch(/--require \S+instrument\S+\.js/);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});

/** Processes whose environment mentions `marker` (the data dir every worker's TMPDIR lives in). */
function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').includes(marker)) pids.push(Number(entry));
    } catch {
      // gone already, or not ours
    }
  }
  return pids;
}

describe.skipIf(process.platform !== 'linux')('the runnable service (dist/main.js)', () => {
  const main = resolve(fileURLToPath(import.meta.url), '..', '..', 'dist', 'main.js');
  const dataDir = mkdtempSync(join(os.tmpdir(), 'agentrt-main-test-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('outlives the reader of its stdout: the log lines are lost, not the runtime', async () => {
    const child = spawn(process.execPath, [main], {
      env: { ...process.env, AGENTRT_RUNTIME_PORT: '0', AGENTRT_DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
      await waitFor(() => output.includes('runtime listening'), 15_000, 'runtime listening');
      const { url } = JSON.parse(output.split('\n').find((l) => l.includes('runtime listening'))!) as {
        url: string;
      };
      // The pipe's reader goes away (a supervisor restarted, a terminal closed): lines meet EPIPE.
      child.stdout.destroy();
      const { control, data } = sdkClients(url);
      const runtime = await createReady(control, 'unlogged', 'counter');
      expect(await invokeJson(data, runtime.agentRuntimeArn!, sessionId('epipe'), {})).toBeDefined();
      control.destroy();
      data.destroy();
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('leaves no worker behind when it is SIGKILLed', async () => {
    const child = spawn(process.execPath, [main], {
      env: {
        ...process.env,
        AGENTRT_RUNTIME_PORT: '0',
        AGENTRT_DATA_DIR: dataDir,
        AGENTRT_PING_INTERVAL_MS: '200',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
      await waitFor(() => output.includes('runtime listening'), 15_000, 'runtime listening');
      const started = JSON.parse(output.split('\n').find((l) => l.includes('runtime listening'))!) as {
        url: string;
        isolation: string;
      };
      expect(['bwrap', 'process-group']).toContain(started.isolation);
      const { control, data } = sdkClients(started.url);
      const runtime = await createReady(control, 'doomed', 'counter');
      await Promise.all(['x', 'y'].map((s) => invokeJson(data, runtime.agentRuntimeArn!, sessionId(s), {})));
      control.destroy();
      data.destroy();
      expect(processesWith(dataDir).length).toBeGreaterThanOrEqual(2);
      child.kill('SIGKILL');
      await waitFor(() => processesWith(dataDir).length === 0, 10_000, 'workers gone after SIGKILL');
    } finally {
      child.kill('SIGKILL');
    }
  });
});

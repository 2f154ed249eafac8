import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Collector, createCollector } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../main.js';

const NOW = Date.now() - 5_000;
const ns = (ms: number): string => (BigInt(Math.round(ms)) * 1_000_000n).toString();
const TRACE = 'ab'.repeat(16);
const SESSION = 'cli-logs-session-000000000000000000000';
const str = (key: string, value: string) => ({ key, value: { stringValue: value } });

async function run(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, {
    stdout: (t) => out.push(t),
    stderr: (t) => err.push(t),
    env: {},
    cwd: process.cwd(),
  });
  return { code, out: out.join(''), err: err.join('') };
}

const post = async (c: Collector, signal: string, body: unknown) => {
  const res = await fetch(`${c.url}/v1/${signal}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
};

const logBody = (records: { body: string; severity: number; trace?: boolean; session?: string }[]) => ({
  resourceLogs: [
    {
      resource: { attributes: [str('service.name', 'agentrt-runtime')] },
      scopeLogs: [
        {
          logRecords: records.map((r, i) => ({
            timeUnixNano: ns(NOW + i),
            severityNumber: r.severity,
            severityText: r.severity >= 13 ? 'WARN' : 'INFO',
            body: { stringValue: r.body },
            attributes: r.session ? [str('session.id', r.session)] : [],
            ...(r.trace ? { traceId: TRACE, spanId: 'cd'.repeat(8) } : {}),
          })),
        },
      ],
    },
  ],
});

describe('agentrt metrics / logs against a running collector', () => {
  let c: Collector;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agentrt-cli-metrics-'));
    c = await createCollector({ dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0 });
    const point = (value: number, name: string) => ({
      timeUnixNano: ns(NOW),
      startTimeUnixNano: ns(NOW - 1000),
      asInt: value,
      attributes: [str('Name', name)],
    });
    await post(c, 'metrics', {
      resourceMetrics: [
        {
          resource: { attributes: [str('service.name', 'agentrt-runtime')] },
          scopeMetrics: [
            {
              metrics: [
                {
                  name: 'Invocations',
                  unit: '{call}',
                  sum: {
                    isMonotonic: true,
                    aggregationTemporality: 1,
                    dataPoints: [point(3, 'a::DEFAULT'), point(2, 'b::DEFAULT')],
                  },
                },
              ],
            },
          ],
        },
      ],
    });
    await post(
      c,
      'logs',
      logBody([
        { body: 'session started', severity: 9, session: SESSION },
        { body: 'container error', severity: 13, trace: true },
        { body: 'unrelated line', severity: 9 },
      ]),
    );
  });
  afterAll(async () => {
    await c.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists metric names, then one metric grouped by an attribute, readable and as JSON', async () => {
    const list = await run(['metrics', '--url', c.url]);
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/^name\s+kind\s+unit\s+series/);
    expect(list.out).toMatch(/Invocations\s+sum\s+\{call\}\s+2/);
    const table = await run([
      'metrics',
      'Invocations',
      '--by',
      'Name',
      '--since',
      '1h',
      '--step',
      '1h',
      '--url',
      c.url,
    ]);
    expect(table.code).toBe(0);
    expect(table.out).toContain('Invocations (sum, {call}) sum per 3600 s');
    expect(table.out).toMatch(/a::DEFAULT\s+3\n/);
    expect(table.out).toMatch(/b::DEFAULT\s+2\n/);
    const json = await run([
      'metrics',
      'Invocations',
      '--fn',
      'sum',
      '--step',
      '1h',
      '--json',
      '--url',
      c.url,
    ]);
    const body = JSON.parse(json.out) as { series: { points: [number, number | null][] }[] };
    expect(body.series[0]!.points.reduce((n, [, v]) => n + (v ?? 0), 0)).toBe(5);
    const bad = await run(['metrics', 'Invocations', '--fn', 'p99', '--url', c.url]);
    expect(bad.code).not.toBe(0);
    expect(bad.err).toContain('does not apply to sum');
    expect((await run(['metrics', 'Invocations', '--since', 'yesterday', '--url', c.url])).code).toBe(2);
    const unseen = await run(['metrics', 'SessionCount', '--url', c.url]);
    expect(unseen.code).toBe(0);
    expect(unseen.out).toContain('no points of SessionCount yet');
  });

  it('agentrt traces query takes the metrics form of the query language', async () => {
    const table = await run([
      'traces',
      'query',
      'metric Invocations sum by Name every 1h since 2h',
      '--url',
      c.url,
    ]);
    expect(table.code).toBe(0);
    expect(table.out).toMatch(/^time\s+Name\s+sum/);
    expect(table.out).toMatch(/a::DEFAULT\s+3\n/);
    expect(table.out).toMatch(/b::DEFAULT\s+2\n/);
    const typo = await run(['traces', 'query', 'metric Invocatons sum', '--url', c.url]);
    expect(typo.code).toBe(1);
    expect(typo.err).toContain('no metric named "Invocatons"');
    expect(typo.err).toMatch(/\n {9}\^/); // the caret under the name
  });

  it('shows logs by session, trace, service and severity', async () => {
    const bySession = await run(['logs', '--session', SESSION, '--url', c.url]);
    expect(bySession.out.trim().split('\n')).toHaveLength(1);
    expect(bySession.out).toMatch(/INFO\s+\[agentrt-runtime session=cli-logs-session-0+\] session started/);
    const byTrace = await run(['logs', '--trace', TRACE, '--url', c.url]);
    expect(byTrace.out).toContain(`trace=${TRACE}] container error`);
    const warn = await run(['logs', '--severity', 'warn', '--json', '--url', c.url]);
    const rows = warn.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { body: string });
    expect(rows.map((r) => r.body)).toEqual(['container error']);
    const all = await run(['logs', '--service', 'agentrt-runtime', '--url', c.url]);
    expect(
      all.out
        .trim()
        .split('\n')
        .map((l) => l.replace(/.*\] /, '')),
    ).toEqual(['session started', 'container error', 'unrelated line']);
    expect((await run(['logs', '--service', 'nobody', '--url', c.url])).out).toBe('(no log records)\n');
  });

  it('--follow prints records as they arrive until SIGINT (the built bin)', async () => {
    const bin = resolve(fileURLToPath(import.meta.url), '..', '..', '..', 'dist', 'bin.js');
    const child = spawn(process.execPath, [bin, 'logs', '--follow', '--grep', 'tail-me', '--url', c.url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    try {
      await new Promise((r) => setTimeout(r, 1500));
      await post(
        c,
        'logs',
        logBody([
          { body: 'tail-me 1', severity: 9 },
          { body: 'tail-me 2', severity: 17 },
        ]),
      );
      const deadline = Date.now() + 10_000;
      while (!out.includes('tail-me 2') && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect(out).toMatch(/tail-me 1\n.*tail-me 2\n/);
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  }, 20_000);
});

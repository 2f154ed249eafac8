// The runnable entry, from dist/ as `node` runs it (`tsc -b` builds it before the suite).
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  COLLECTOR_MAIN as MAIN,
  hex,
  jsonRequest,
  jsonSpan,
  postJson,
  startCollectorProcess,
  tempDir,
} from './testing.test-util.js';

const children: ChildProcess[] = [];
const cleanups: (() => void)[] = [];

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const f of cleanups.splice(0)) f();
});

function start(dataDir: string, env: Record<string, string> = {}) {
  const started = startCollectorProcess(dataDir, env);
  children.push(started.child);
  return started;
}

describe('collector main (dist)', () => {
  it('is built', () => {
    expect(existsSync(MAIN), `${MAIN} missing: run npx tsc -b collector`).toBe(true);
  });

  it('outlives the reader of its stdout: the log lines are lost, not the collector', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.remove);
    const c = start(tmp.dir);
    const url = await c.url;
    // The pipe's reader goes away (a supervisor or a bench that ended): the next lines meet EPIPE.
    c.child.stdout!.destroy();
    c.child.kill('SIGTERM');
    expect(await c.exited).toBe(0);
    expect((await fetch(`${url}/healthz`).catch(() => undefined))?.status).toBeUndefined();
  });

  it('logs JSON lines, warns on bad env values, and on SIGTERM writes what it acknowledged before exiting 0', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.remove);
    const first = start(tmp.dir, { AGENTRT_TRACE_INDEX_PERCENT: 'lots' });
    const url = await first.url;
    expect(first.lines.find((l) => l.level === 'warn')?.msg).toMatch(/AGENTRT_TRACE_INDEX_PERCENT="lots"/);
    const traceId = hex(0x5151, 16);
    const res = await postJson(
      `${url}/v1/traces`,
      jsonRequest('main-test', [
        jsonSpan({ traceId, spanId: hex(1, 8), name: 'kept', startMs: Date.now(), durationMs: 2 }),
      ]),
    );
    expect(res.status).toBe(200);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['shutting down', 'stopped']));

    const second = start(tmp.dir);
    const url2 = await second.url;
    const q = await postJson(`${url2}/api/query`, { query: `filter traceId = "${traceId}" | fields name` });
    expect(((await q.json()) as { rows: unknown[] }).rows).toEqual([{ name: 'kept' }]);
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);
  });

  it('on SIGTERM commits and answers the requests it took, closes the store (no WAL left) and exits 0', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.remove);
    const first = start(tmp.dir);
    const url = await first.url;
    const sent = Array.from({ length: 12 }, (_, i) =>
      postJson(
        `${url}/v1/traces`,
        jsonRequest(
          'sigterm-test',
          Array.from({ length: 300 }, (_, j) =>
            jsonSpan({
              traceId: hex(0x600 + i, 16),
              spanId: hex(j + 1, 8),
              name: 'in flight',
              startMs: Date.now(),
              durationMs: 1,
            }),
          ),
        ),
      ).then(
        (r) => r.status,
        () => 'no answer',
      ),
    );
    // Stop while the requests are being read, decoded and written.
    await new Promise((resolve) => setTimeout(resolve, 20));
    first.child.kill('SIGTERM');
    const statuses = await Promise.all(sent);
    expect(await first.exited).toBe(0);
    // Taken before the stop: 200 once committed; after it: 503 (or the connection was closed).
    for (const s of statuses) expect([200, 503, 'no answer']).toContain(s);
    expect(existsSync(join(tmp.dir, 'collector.sqlite-wal'))).toBe(false);

    const second = start(tmp.dir);
    const url2 = await second.url;
    for (const [i, s] of statuses.entries()) {
      const q = await postJson(`${url2}/api/query`, {
        query: `filter traceId = "${hex(0x600 + i, 16)}" | stats count(*) as n`,
      });
      const n = ((await q.json()) as { rows: { n: number }[] }).rows[0]!.n;
      if (s === 200) expect(n).toBe(300);
      else expect([0, 300]).toContain(n);
    }
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('exits 1 with a clear log line when the port is taken', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.remove);
    const first = start(tmp.dir);
    const port = new URL(await first.url).port;
    const tmp2 = tempDir();
    cleanups.push(tmp2.remove);
    const second = start(tmp2.dir, { AGENTRT_COLLECTOR_PORT: port });
    await expect(second.url).rejects.toThrow(/exited with 1/);
    expect(await second.exited).toBe(1);
    expect(second.lines.find((l) => l.level === 'error')).toMatchObject({
      msg: 'could not start',
      port: Number(port),
    });
    first.child.kill('SIGTERM');
    await first.exited;
  });
});

import { closeSync, openSync, statSync, truncateSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger } from '../../logger.js';
import { decodeTraceRequestJson } from '../../otlp/decode-json.js';
import { hex, jsonRequest, jsonSpan, postJson, startCollector, tempDir } from '../../testing.test-util.js';
import { createSpanStore } from './span-store.js';

type Started = Awaited<ReturnType<typeof startCollector>>;
const T0 = Date.UTC(2026, 10, 21, 12);

/** A data dir with 6000 spans, closed (the WAL folded into the database file). */
function filledDataDir(): { dir: string; file: string; remove: () => void } {
  const tmp = tempDir();
  const store = createSpanStore({ dataDir: tmp.dir });
  const spans = Array.from({ length: 6000 }, (_, i) =>
    jsonSpan({
      traceId: hex(1 + Math.floor(i / 10), 16),
      spanId: hex(i + 1, 8),
      name: `op ${i % 7}`,
      startMs: T0 + i,
      durationMs: 1,
      attributes: { 'session.id': `s${i % 13}`, text: 'x'.repeat(300) },
    }),
  );
  store.insertBatch(decodeTraceRequestJson(JSON.stringify(jsonRequest('svc', spans))).spans);
  const file = store.path;
  store.close();
  return { dir: tmp.dir, file, remove: tmp.remove };
}

/** Overwrites `length` bytes at `offset` with a pattern no page holds. */
function scribble(file: string, offset: number, length: number): void {
  const fd = openSync(file, 'r+');
  writeSync(fd, Buffer.alloc(length, 0xa5), 0, length, offset);
  closeSync(fd);
}

const oneSpan = (i: number) =>
  jsonRequest('svc', [
    jsonSpan({
      traceId: hex(9000 + i, 16),
      spanId: hex(9000 + i, 8),
      name: 'new',
      startMs: T0,
      durationMs: 1,
    }),
  ]);

/** A logger keeping its lines' JSON (what an operator reads). */
function capturingLogger(): Logger & { text: () => string } {
  const lines: string[] = [];
  const log = (msg: string, fields?: Record<string, unknown>) =>
    lines.push(JSON.stringify({ msg, ...fields }));
  return { info: log, warn: log, error: log, text: () => lines.join('\n') };
}

/** A write refused while the store is corrupt: 503 with the hint, and no path of the host in it. */
async function expectWriteRefused(url: string, file: string): Promise<void> {
  const write = await postJson(`${url}/v1/traces`, oneSpan(1));
  expect(write.status).toBe(503);
  const { message } = (await write.json()) as { message: string };
  expect(message).toMatch(/the store is corrupt.*Recovering a corrupt store/s);
  expect(message).not.toContain(dirname(file));
}

/**
 * The collector on a damaged file: it refuses to start naming the file, or starts unhealthy and
 * refuses writes, naming the file in its log only (a client is not told where it is). Never 200 on
 * /healthz, never an acknowledged span.
 */
async function expectRefused(dir: string, file: string): Promise<void> {
  let c: Started;
  const logger = capturingLogger();
  try {
    c = await startCollector({ dataDir: dir, logger });
  } catch (error) {
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toMatch(/is corrupt.*Recovering a corrupt store/);
    return;
  }
  try {
    const health = await fetch(`${c.url}/healthz`);
    expect(health.status).toBe(503);
    const body = await health.text();
    expect(JSON.parse(body)).toMatchObject({
      status: 'corrupt',
      store: { status: 'corrupt', file: 'collector.sqlite' },
    });
    expect(body).not.toContain(dir);
    await expectWriteRefused(c.url, file);
    expect(logger.text()).toContain(file);
  } finally {
    await c.cleanup();
  }
}

describe('store integrity', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const f of cleanups.splice(0)) f();
  });

  it('refuses to start on a damaged header, naming the file', async () => {
    const d = filledDataDir();
    cleanups.push(d.remove);
    scribble(d.file, 0, 100);
    await expect(startCollector({ dataDir: d.dir })).rejects.toThrow(d.file);
  });

  it('refuses writes and reports unhealthy on pages damaged mid-file', async () => {
    const d = filledDataDir();
    cleanups.push(d.remove);
    const size = statSync(d.file).size;
    scribble(d.file, Math.floor(size * 0.4), 64 * 1024);
    await expectRefused(d.dir, d.file);
  });

  it('refuses writes and reports unhealthy on a truncated file', async () => {
    const d = filledDataDir();
    cleanups.push(d.remove);
    truncateSync(d.file, Math.floor(statSync(d.file).size / 2));
    await expectRefused(d.dir, d.file);
  });

  it('finds damage done while running with the periodic check, and stops acknowledging', async () => {
    const d = filledDataDir();
    cleanups.push(d.remove);
    const c = await startCollector({ dataDir: d.dir, integrityCheckMinutes: 0.005 });
    try {
      expect((await fetch(`${c.url}/healthz`)).status).toBe(200);
      expect((await postJson(`${c.url}/v1/traces`, oneSpan(2))).status).toBe(200);
      const size = statSync(d.file).size;
      scribble(d.file, Math.floor(size * 0.3), 128 * 1024);
      await expect
        .poll(async () => (await fetch(`${c.url}/healthz`)).status, { timeout: 5000, interval: 100 })
        .toBe(503);
      await expectWriteRefused(c.url, d.file);
    } finally {
      await c.cleanup();
    }
  });
});

import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../../logger.js';
import { decodeTraceRequestJson } from '../../otlp/decode-json.js';
import { hex, jsonRequest, jsonSpan, tempDir } from '../../testing.test-util.js';
import type { SpanRecord } from '../../wire-types.js';
import { type SpanStore, createSpanStore } from './span-store.js';
import { WriterError, startWriterThread } from './writer-thread.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

function spans(
  count: number,
  first: number,
  attrs: Record<string, string> = {},
  startMs = Date.now(),
): SpanRecord[] {
  return decodeTraceRequestJson(
    JSON.stringify(
      jsonRequest(
        'writer-test',
        Array.from({ length: count }, (_, i) =>
          jsonSpan({
            traceId: hex(0x7000 + Math.floor((first + i) / 10), 16),
            spanId: hex(first + i + 1, 8),
            name: `op${first + i}`,
            startMs: startMs + i,
            durationMs: 1,
            attributes: attrs,
          }),
        ),
      ),
    ),
  ).spans;
}

function open(): SpanStore {
  const tmp = tempDir();
  const store = createSpanStore({ dataDir: tmp.dir, backgroundCheckpoints: true });
  cleanups.push(tmp.remove, () => store.close());
  return store;
}

/** A store and a writer thread on it, both closed after the test. */
async function openWithWriter() {
  const store = open();
  const writer = await startWriterThread({
    path: store.path,
    traceIndexPercent: 100,
    logger: recordingLogger(),
  });
  cleanups.push(() => writer.close());
  return { store, writer };
}

function recordingLogger(): Logger & { lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = [];
  return {
    lines,
    info: (msg) => lines.push({ level: 'info', msg }),
    warn: (msg) => lines.push({ level: 'warn', msg }),
    error: (msg) => lines.push({ level: 'error', msg }),
  };
}

const stored = (store: SpanStore, where = '1'): number =>
  (store.db.prepare(`SELECT count(*) AS n FROM spans WHERE ${where}`).get() as { n: number }).n;

describe('store writer thread', () => {
  it('commits every batch it is sent, answers each once committed, and finishes them all on close', async () => {
    const store = open();
    const writer = await startWriterThread({
      path: store.path,
      traceIndexPercent: 100,
      logger: recordingLogger(),
    });
    // Sent back to back: the thread commits what arrived meanwhile together, in order.
    const writes = Array.from({ length: 30 }, (_, i) => writer.write(store.encodeBatch(spans(100, i * 100))));
    await writes[0];
    expect(stored(store)).toBeGreaterThanOrEqual(100);
    const closed = writer.close();
    await expect(Promise.all(writes)).resolves.toBeDefined();
    await closed;
    expect(stored(store)).toBe(3000);
    expect(store.services()).toEqual([expect.objectContaining({ name: 'writer-test', spanCount: 3000 })]);
    expect(store.attributeKeys()).toContain('resource.attributes.service.name');
    await expect(writer.write(store.encodeBatch(spans(1, 9999)))).rejects.toThrow(/closing/);
    // The main connection closes last and folds the WAL into the database.
    store.close();
    expect(existsSync(`${store.path}-wal`)).toBe(false);
  });

  it('rebuilds stale summaries on its own connection, in slices queued between writes', async () => {
    const { store, writer } = await openWithWriter();
    const dirty = (): number =>
      (store.db.prepare('SELECT count(*) AS n FROM dirty_traces').get() as { n: number }).n;
    const listed = (): number =>
      (store.db.prepare('SELECT count(*) AS n FROM traces').get() as { n: number }).n;
    // 200 traces of 10 spans: all stale, none listed yet.
    await writer.write(store.encodeBatch(spans(2000, 0, { 'session.id': 'refresh' })));
    expect(dirty()).toBe(200);
    expect(listed()).toBe(0);
    // A slice at a time, with writes sent between the slices committing in order.
    const slices: Promise<number>[] = [];
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 5; i++) {
      slices.push(writer.refreshSummaries(32));
      writes.push(writer.write(store.encodeBatch(spans(10, 10_000 + i * 10))));
    }
    // Traces first; the session once they are caught up.
    expect(await Promise.all(slices)).toEqual([32, 32, 32, 32, 32]);
    expect(store.db.prepare('SELECT count(*) AS n FROM sessions').get()).toEqual({ n: 0 });
    await Promise.all(writes);
    for (let n = 1; n > 0;) n = await writer.refreshSummaries(64);
    expect(dirty()).toBe(0);
    expect(listed()).toBe(205);
    // What the main connection reads is what summarizing the trace's spans gives.
    const traceId = hex(0x7000, 16);
    expect(store.listTraces({ q: traceId })[0]).toMatchObject({
      traceId,
      spanCount: 10,
      sessionId: 'refresh',
    });
    expect(store.listSessions()[0]).toMatchObject({ sessionId: 'refresh', traceCount: 200, spanCount: 2000 });
  });

  it('runs retention a DELETE chunk per message, with writes committing between the chunks', async () => {
    const { store, writer } = await openWithWriter();
    const dayMs = 86_400_000;
    const nowMs = Date.now();
    await writer.write(store.encodeBatch(spans(12_010, 0, { 'session.id': 'old' }, nowMs - 10 * dayMs)));
    for (let n = 1; n > 0;) n = await writer.refreshSummaries(500);
    const steps: number[] = [];
    const writes: Promise<void>[] = [];
    for (let step = { deleted: 0, more: true }; step.more;) {
      step = await writer.retain({ maxAgeMs: 7 * dayMs }, nowMs);
      steps.push(step.deleted);
      // New spans (of the session 'new', dated now) arriving between the chunks.
      if (writes.length < 3)
        writes.push(
          writer.write(store.encodeBatch(spans(10, 20_000 + writes.length * 10, { 'session.id': 'new' }))),
        );
    }
    expect(steps).toEqual([5000, 5000, 2010, 0]);
    await Promise.all(writes);
    await writer.retain({ maxAgeMs: 7 * dayMs }, nowMs, true);
    for (let n = 1; n > 0;) n = await writer.refreshSummaries(500);
    expect(stored(store)).toBe(30);
    expect(store.listSessions().map((s) => s.sessionId)).toEqual(['new']);
    expect(store.services()).toEqual([expect.objectContaining({ name: 'writer-test', spanCount: 30 })]);
  });

  it('answers a batch that fails with its error (rolled back), and keeps writing the others', async () => {
    const store = open();
    store.db.exec(`CREATE TRIGGER poison BEFORE INSERT ON spans WHEN NEW.name = 'poison'
      BEGIN SELECT RAISE(ABORT, 'poisoned span'); END`);
    const writer = await startWriterThread({
      path: store.path,
      traceIndexPercent: 100,
      logger: recordingLogger(),
    });
    cleanups.push(() => writer.close());
    const bad = spans(3, 0);
    bad[1]!.name = 'poison';
    const batch = store.encodeBatch(bad);
    await expect(writer.write(batch)).rejects.toThrow(
      new WriterError('the batch was not stored: poisoned span'),
    );
    expect(stored(store)).toBe(0);
    await writer.write(store.encodeBatch(spans(3, 10)));
    expect(stored(store)).toBe(3);
  });

  it('fails the unanswered writes when the thread dies, refuses writes while it is down, and starts a new one', async () => {
    const store = open();
    const logger = recordingLogger();
    const writer = await startWriterThread({
      path: store.path,
      traceIndexPercent: 100,
      logger,
      restartDelayMs: 100,
    });
    cleanups.push(() => writer.close());
    await writer.write(store.encodeBatch(spans(10, 0, { phase: 'before' })));
    // A big batch in flight when the thread dies: 30 ms into its ~200 ms transaction, most likely.
    const inFlight = writer.write(store.encodeBatch(spans(20_000, 100, { phase: 'in-flight' })));
    await new Promise((resolve) => setTimeout(resolve, 30));
    await writer.terminateForTest();
    const outcome = await inFlight.then(
      () => 'stored',
      (error: unknown) => error,
    );
    if (outcome !== 'stored') {
      expect(outcome).toBeInstanceOf(WriterError);
      expect((outcome as Error).message).toMatch(
        /the store's writer thread stopped unexpectedly \(exit code 1\)/,
      );
      // Not acknowledged, and all or nothing: rolled back with the thread's transaction, or
      // committed just before the thread died with its answer (a loaded CI machine saw that).
      expect([0, 20_000]).toContain(stored(store, "doc LIKE '%in-flight%'"));
    } else expect(stored(store, "doc LIKE '%in-flight%'")).toBe(20_000);
    expect(writer.failure?.message).toMatch(/stopped unexpectedly/);
    await expect(writer.write(store.encodeBatch(spans(1, 50_000)))).rejects.toThrow(/stopped unexpectedly/);
    expect(logger.lines).toContainEqual({ level: 'error', msg: 'store writer thread stopped; restarting' });

    // The new thread takes writes again (the dead one's connection and locks are gone).
    await vi.waitFor(() => expect(writer.failure).toBeUndefined(), { timeout: 5000 });
    expect(logger.lines).toContainEqual({ level: 'info', msg: 'store writer thread restarted' });
    await writer.write(store.encodeBatch(spans(10, 60_000, { phase: 'after' })));
    expect(stored(store, 'doc LIKE \'%"before"%\'')).toBe(10);
    expect(stored(store, 'doc LIKE \'%"after"%\'')).toBe(10);
  });

  it('rejects with the reason when its thread cannot start, and does not retry', async () => {
    const logger = recordingLogger();
    await expect(
      startWriterThread({ path: '/nonexistent/dir/collector.sqlite', traceIndexPercent: 100, logger }),
    ).rejects.toThrow(/^the store's writer thread stopped unexpectedly \(.*unable to open database file/);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(logger.lines).toEqual([]);
  });
});

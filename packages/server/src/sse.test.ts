import { afterEach, describe, expect, it } from 'vitest';
import { getRequestContext } from './request-context.js';
import { closeAll, dataOf, invoke, readFrames, start, until } from './testing.test.util.js';

afterEach(closeAll);

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });

describe('streaming (async generator entrypoints)', () => {
  it('sends one data frame per item as it is produced, without needing Accept', async () => {
    const { url } = await start(async function* (p: { n: number }) {
      for (let i = 0; i < p.n; i++) {
        if (i > 0) await sleep(150);
        yield { i, text: `chunk ${i}` };
      }
    });
    const sentAt = performance.now();
    const res = await invoke(url, { n: 4 });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const frames = await readFrames(res);
    expect(frames.map(dataOf)).toEqual([0, 1, 2, 3].map((i) => ({ i, text: `chunk ${i}` })));
    expect(frames.every((f) => /^data: .+$/.test(f.text))).toBe(true);
    // Incremental: the first frame arrives long before the last one was produced (450 ms of sleeps),
    // and the frames are spread out instead of arriving together at the end.
    expect(frames[0]!.atMs - sentAt).toBeLessThan(frames[3]!.atMs - sentAt - 300);
    expect(frames[2]!.atMs - frames[0]!.atMs).toBeGreaterThan(150);
  });

  it('frames strings and numbers as JSON (one line each, even with newlines)', async () => {
    const { url } = await start(async function* () {
      yield 'line one\nline two';
      yield 42;
      yield null;
    });
    const frames = await readFrames(await invoke(url, {}, { accept: 'application/json' }));
    expect(frames.map((f) => f.text)).toEqual(['data: "line one\\nline two"', 'data: 42', 'data: null']);
  });

  it('streams sync generators and other async iterables too', async () => {
    const { url } = await start((p: { kind: string }) =>
      p.kind === 'sync'
        ? (function* () {
            yield 1;
            yield 2;
          })()
        : {
            async *[Symbol.asyncIterator]() {
              yield 'a';
            },
          },
    );
    expect((await readFrames(await invoke(url, { kind: 'sync' }))).map(dataOf)).toEqual([1, 2]);
    expect((await readFrames(await invoke(url, { kind: 'iterable' }))).map(dataOf)).toEqual(['a']);
  });

  it('ends a failed stream with a well-formed error event after the items already sent', async () => {
    const { url } = await start(async function* () {
      yield { ok: 1 };
      throw new RangeError('model quota exhausted');
    });
    const res = await invoke(url, {});
    expect(res.status).toBe(200);
    const frames = await readFrames(res);
    expect(frames).toHaveLength(2);
    expect(dataOf(frames[0]!)).toEqual({ ok: 1 });
    expect(frames[1]!.text.split('\n')[0]).toBe('event: error');
    expect(dataOf(frames[1]!)).toEqual({
      error: 'model quota exhausted',
      error_type: 'RangeError',
      message: 'An error occurred during streaming',
    });
  });

  it('sends heartbeat comments during long silences', async () => {
    const { url } = await start(
      async function* () {
        yield 'start';
        await sleep(400);
        yield 'end';
      },
      { heartbeatMs: 100 },
    );
    const frames = await readFrames(await invoke(url, {}));
    expect(frames[0]!.text).toBe('data: "start"');
    expect(frames.at(-1)!.text).toBe('data: "end"');
    const beats = frames.filter((f) => f.text === ': heartbeat');
    expect(beats.length).toBeGreaterThanOrEqual(2);
  });

  it('cancels the generator when the client disconnects and fires the abort signal', async () => {
    let produced = 0;
    let finallyRan = false;
    let signalFired = false;
    const { url, app } = await start(async function* (_p, ctx) {
      ctx.signal.addEventListener('abort', () => (signalFired = true));
      try {
        for (;;) {
          produced++;
          yield { n: produced, session: getRequestContext()?.sessionId ?? null };
          await sleep(50);
        }
      } finally {
        finallyRan = true;
      }
    });
    const controller = new AbortController();
    const res = await invoke(
      url,
      {},
      { 'x-cloud-agent-runtime-session-id': 'stream-session' },
      {
        signal: controller.signal,
      },
    );
    const frames = await readFrames(res, 3);
    expect(dataOf(frames[0]!)).toEqual({ n: 1, session: 'stream-session' });
    controller.abort();
    await until(() => finallyRan && signalFired && app.inFlight === 0);
    const stoppedAt = produced;
    await sleep(200);
    expect(produced).toBe(stoppedAt);
    expect(produced).toBeLessThan(10);
  });
});

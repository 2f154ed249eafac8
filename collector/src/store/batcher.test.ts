import { describe, expect, it } from 'vitest';
import { createBatcher } from './batcher.js';

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

describe('createBatcher', () => {
  it('writes what arrives while a batch runs as the next batch, and answers each item', async () => {
    const batches: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const b = createBatcher<number, string>(async (items) => {
      batches.push(items);
      if (batches.length === 1) await gate;
      return items.map((i) => `#${i}`);
    });
    const first = b.add(1);
    const rest = [b.add(2), b.add(3), b.add(4)];
    await tick();
    expect(batches).toEqual([[1]]);
    release();
    expect(await Promise.all([first, ...rest])).toEqual(['#1', '#2', '#3', '#4']);
    expect(batches).toEqual([[1], [2, 3, 4]]);
  });

  it('fails the items of a failed batch only', async () => {
    let calls = 0;
    const b = createBatcher<number, number>(async (items) => {
      calls++;
      if (calls === 1) throw new Error('down');
      return items;
    });
    const failed = b.add(1);
    const next = b.add(2);
    await expect(failed).rejects.toThrow('down');
    expect(await next).toBe(2);
  });

  it('lingers for more unless enough waits, and flush starts what lingers', async () => {
    const batches: number[][] = [];
    const b = createBatcher<number, void>(
      async (items) => {
        batches.push(items);
        return items.map(() => undefined);
      },
      { lingerMs: 10_000, flushSize: 3 },
    );
    const early = [b.add(1), b.add(1)];
    await tick(20);
    expect(batches).toEqual([]);
    // The third item reaches flushSize: the batch starts without waiting out the linger.
    await Promise.all([...early, b.add(1)]);
    expect(batches).toEqual([[1, 1, 1]]);
    const late = b.add(7);
    await tick(20);
    expect(batches).toHaveLength(1);
    await b.flush();
    await late;
    expect(batches).toEqual([[1, 1, 1], [7]]);
  });
});

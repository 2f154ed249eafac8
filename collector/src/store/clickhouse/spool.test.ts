// The spool's files on their own: appends across segment rotations while a group sync runs, found
// again whole after a reopen, acknowledged frames gone.
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../logger.js';
import { tempDir } from '../../testing.test-util.js';
import { openSpool } from './spool.js';

const rowsOf = (payload: Buffer): number => payload.readUInt32LE(0);
const payload = (i: number): Buffer => {
  const b = Buffer.alloc(1000, i % 251);
  b.writeUInt32LE(1, 0);
  b.writeUInt32LE(i, 4);
  return b;
};

describe('spool', () => {
  it('takes appends across segment rotations while a sync runs, and finds them all again', async () => {
    const dir = tempDir();
    try {
      const options = { dir: dir.dir, maxBytes: 1 << 30, logger: silentLogger, segmentBytes: 8192 };
      const spool = openSpool(options, rowsOf);
      // 200 appends at once: a rotation every 8 frames, each while the group sync is in flight.
      const results = await Promise.allSettled(
        Array.from({ length: 200 }, (_, i) => spool.append(payload(i), 1)),
      );
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      expect(spool.refusal()).toBeUndefined();
      spool.ack(50);
      await spool.close();
      expect(readdirSync(dir.dir).filter((f) => f.endsWith('.spool')).length).toBeGreaterThan(10);
      const again = openSpool(options, rowsOf);
      expect(again.entries.map((e) => again.read(e).readUInt32LE(4))).toEqual(
        Array.from({ length: 150 }, (_, i) => 50 + i),
      );
      await again.close();
    } finally {
      dir.remove();
    }
  });
});

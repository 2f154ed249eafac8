import { PassThrough, Readable, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { relayBody } from './relay-body.js';

describe('relayBody', () => {
  it('stops pulling from a fast worker while the caller does not read (bounded memory)', async () => {
    let produced = 0;
    const chunk = Buffer.alloc(1024 * 1024, 1);
    const worker = new Readable({
      read() {
        produced += chunk.length;
        this.push(produced > 1024 * chunk.length ? null : chunk); // up to 1 GiB if nothing held it back
      },
    });
    // A caller that takes one chunk and then never acknowledges (a slow reader that went quiet).
    const caller = new Writable({ highWaterMark: 64 * 1024, write: () => undefined });
    relayBody(worker, caller, () => undefined);
    await new Promise((r) => setTimeout(r, 300));
    expect(produced).toBeLessThan(8 * chunk.length);
  });

  it('passes every byte through, in order, and ends the caller', async () => {
    const parts = ['data: 1\n\n', 'data: 2\n\n', 'data: 3\n\n'];
    const caller = new PassThrough();
    let text = '';
    caller.on('data', (c: Buffer) => (text += c.toString()));
    const ended = new Promise<void>((r) => relayBody(Readable.from(parts), caller, r));
    await ended;
    expect(text).toBe(parts.join(''));
    expect(caller.writableEnded).toBe(true);
  });
});

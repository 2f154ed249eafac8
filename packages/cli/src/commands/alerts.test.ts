import { createServer } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Collector, createCollector } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../main.js';

let dir: string;
let collector: Collector;
const hooks: string[] = [];
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    hooks.push(body);
    res.writeHead(200).end();
  });
});

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main([...args, '--url', collector.url], {
    stdout: (t) => void (out += t),
    stderr: (t) => void (err += t),
    env: {},
    cwd: dir,
  });
  return { code, out, err };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentrt-cli-alerts-'));
  collector = await createCollector({ dataDir: join(dir, 'collector'), host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  await collector?.close();
  receiver.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('agentrt alerts', () => {
  it('sets rules from a file, lists them, and tests a webhook; a bad file names the field', async () => {
    const address = receiver.address();
    const webhook = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`;
    const file = join(dir, 'rules.json');
    writeFileSync(
      file,
      JSON.stringify({
        rules: [
          {
            name: 'per-user',
            measure: 'usd',
            threshold: 5,
            windowSeconds: 3600,
            groupBy: 'user.id',
            webhook,
          },
        ],
      }),
    );
    expect(await run(['alerts', 'set', file])).toMatchObject({ code: 0, out: '1 rule(s) set\n' });
    const listed = await run(['alerts']);
    expect(listed.out).toMatch(/per-user\s+\|?\s*usd\s+\|?\s*5\s+\|?\s*3600s\s+\|?\s*user\.id/);
    expect(listed.out).toContain('firing now: 0');
    const tested = await run(['alerts', 'test', 'per-user']);
    expect(tested.out).toBe("test event sent to per-user's webhook: it answered 200\n");
    expect(JSON.parse(hooks[0]!)).toMatchObject({ rule: 'per-user', status: 'test' });
    writeFileSync(file, JSON.stringify({ rules: [{ name: 'x', measure: 'tokens', threshold: 0 }] }));
    const bad = await run(['alerts', 'set', file]);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('collector answered 400: rules[0].threshold must be a number above 0');
    expect((await run(['alerts', 'test', 'nope'])).err).toContain("no alert rule named 'nope'");
  });
});

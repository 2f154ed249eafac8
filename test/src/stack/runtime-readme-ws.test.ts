import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type RuntimeServer, createRuntimeClient, createRuntimeServer } from '@agentrt/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRepoFile, repoRoot } from './repo.js';

/**
 * What packages/runtime/README.md says about `/ws` is what the runtime answers (issue #19 finding 6:
 * the README said a ValidationException while the runtime answered 404; main now bridges WebSockets).
 */
describe('runtime README: /ws', () => {
  let dir: string;
  let server: RuntimeServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agentrt-readme-ws-'));
    server = await createRuntimeServer({
      host: '127.0.0.1',
      port: 0,
      dataDir: dir,
      logSink: () => undefined,
    });
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('documents the WebSocket route, and a plain GET answers the 400 it describes', async () => {
    const readme = readRepoFile('packages/runtime/README.md');
    expect(readme).toMatch(/`GET \/runtimes\/\{arn\}\/ws`/);
    expect(readme).toMatch(/plain GET[^.]*400/);
    const client = createRuntimeClient({ url: server.url });
    const created = await client.create('ws_readme', {
      containerUri: pathToFileURL(join(repoRoot, 'packages/runtime/test-fixtures/counter')).href,
    });
    await client.waitSettled(created.agentRuntimeId);
    const res = await fetch(`${server.url}/runtimes/${encodeURIComponent(created.agentRuntimeArn)}/ws`);
    expect(res.status).toBe(400);
    expect(res.headers.get('x-amzn-errortype')).toBe('ValidationException');
    expect(((await res.json()) as { message: string }).message).toContain('Upgrade: websocket');
  });
});

import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Collector, createCollector } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shellBlocks } from './readme-commands.js';
import { readRepoFile, repoRoot } from './repo.js';

const run = promisify(execFile);

/**
 * The collector README's sample span, sent as written, survives the collector's retention pass (it
 * runs every minute; with a 2025 timestamp the span was deleted before the next pasted command could
 * find it), and the README's `traces show` finds it afterwards.
 */
describe('collector README sample span', () => {
  let dataDir: string;
  let collector: Collector;
  const commands = shellBlocks(readRepoFile('collector/README.md')).flatMap((b) => b.commands);
  const send = commands.find((c) => c.includes('/v1/traces'))!;
  const show = commands.find((c) => c.includes('traces show'))!;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'agentrt-readme-sample-'));
    collector = await createCollector({ dataDir, port: 0, host: '127.0.0.1', retentionIntervalMs: 200 });
  });
  afterAll(async () => {
    await collector.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('is kept by retention, and the README’s traces show finds it', async () => {
    expect(send, 'the README sends a span to /v1/traces').toBeDefined();
    const port = (line: string) => line.replaceAll('localhost:4318', `127.0.0.1:${collector.port}`);
    await run('bash', ['-c', port(send)], { cwd: repoRoot });
    // Two retention passes of the collector itself (every 200 ms here, every minute by default).
    await new Promise((resolve) => setTimeout(resolve, 600));
    const { stdout } = await run('bash', ['-c', show], {
      cwd: repoRoot,
      env: {
        ...process.env,
        PATH: `${join(process.execPath, '..')}:${process.env['PATH']}`,
        AGENTRT_COLLECTOR_URL: collector.url,
      },
    });
    expect(stdout).toContain('chat claude');
  });
});

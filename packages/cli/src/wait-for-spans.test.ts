import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCollector, type Collector } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from './main.js';

const ns = (ms: number): string => (BigInt(Math.round(ms)) * 1_000_000n).toString();

function span(traceId: string, sessionId: string) {
  const now = Date.now();
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'late-agent' } }] },
        scopeSpans: [
          {
            spans: [
              {
                traceId,
                spanId: traceId.slice(0, 16),
                name: 'invoke_agent late',
                kind: 2,
                startTimeUnixNano: ns(now - 100),
                endTimeUnixNano: ns(now),
                attributes: [{ key: 'session.id', value: { stringValue: sessionId } }],
              },
            ],
          },
        ],
      },
    ],
  };
}

/**
 * `agentrt sessions <id>` / `traces show <id>` run right after an invocation, before the agent's
 * exporter has sent its batch: they wait (saying so) instead of answering 404, and say why when they
 * give up.
 */
describe('waiting for spans that are on their way', () => {
  let dataDir: string;
  let collector: Collector;
  /** What the command running now has written to stderr so far. */
  let liveStderr = '';
  const run = async (args: string[]) => {
    let stdout = '';
    let stderr = '';
    liveStderr = '';
    const code = await main(args, {
      stdout: (t) => (stdout += t),
      stderr: (t) => {
        stderr += t;
        liveStderr = stderr;
      },
      env: { AGENTRT_COLLECTOR_URL: collector.url },
      cwd: dataDir,
    });
    return { code, stdout, stderr };
  };
  /**
   * Sends the span `ms` after the command says it waits (on a loaded machine the command may start
   * later than a timer set beside it would fire).
   */
  const sendLater = async (traceId: string, sessionId: string, ms: number): Promise<void> => {
    for (const deadline = Date.now() + 30_000; !liveStderr.includes('waiting for spans…');) {
      if (Date.now() > deadline) throw new Error('the command never said it waits');
      await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, ms));
    const res = await fetch(`${collector.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(span(traceId, sessionId)),
    });
    if (!res.ok) throw new Error(`ingest ${res.status}`);
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'agentrt-cli-wait-'));
    collector = await createCollector({ dataDir, port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await collector.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('sessions <id> waits for a session whose spans arrive 1.5 s later', async () => {
    const [result] = await Promise.all([
      run(['sessions', 'late-session-00000000000000000000000000001']),
      sendLater('b1'.repeat(16), 'late-session-00000000000000000000000000001', 1500),
    ]);
    expect(result.stderr).toContain('waiting for spans…');
    expect(result).toMatchObject({ code: 0 });
    expect(result.stdout).toContain('session late-session-00000000000000000000000000001');
    expect(result.stdout).toContain('invoke_agent late');
  });

  it('traces show <id> waits for a trace that arrives 1.5 s later', async () => {
    const [result] = await Promise.all([
      run(['traces', 'show', 'c2'.repeat(16)]),
      sendLater('c2'.repeat(16), 'other-session-0000000000000000000000000001', 1500),
    ]);
    expect(result.stderr).toContain('waiting for spans…');
    expect(result).toMatchObject({ code: 0 });
    expect(result.stdout).toContain('invoke_agent late');
  });

  it('gives up after --wait seconds and says what the collector received meanwhile', async () => {
    const [unknown] = await Promise.all([
      run(['sessions', 'never-session-00000000000000000000000000001', '--wait', '1.5']),
      sendLater('d3'.repeat(16), 'someone-else-000000000000000000000000000001', 300),
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('waiting for spans…');
    expect(unknown.stderr).toMatch(
      /no session never-session-\w+ in the collector at http:\/\/127\.0\.0\.1:\d+ \(collector answered 404: [^)]*\): the collector received 1 span\(s\) in the last 1\.5 s, none for it/,
    );
    const idle = await run(['traces', 'show', 'e4'.repeat(16), '--wait', '0.5']);
    expect(idle.code).toBe(1);
    expect(idle.stderr).toContain('the collector received no spans at all in the last 0.5 s');
  });

  it('--wait 0 answers at once; a bad --wait is a usage error naming the flag', async () => {
    const started = Date.now();
    const now = await run(['sessions', 'gone-session-000000000000000000000000000001', '--wait', '0']);
    expect(now.code).toBe(1);
    expect(now.stderr).not.toContain('waiting for spans…');
    expect(now.stderr).toContain('not waiting (--wait 0)');
    expect(Date.now() - started).toBeLessThan(3000);
    const bad = await run(['traces', 'show', 'f5'.repeat(16), '--wait', 'soon']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--wait must be a number of seconds (0 = do not wait), got 'soon'");
  });
});

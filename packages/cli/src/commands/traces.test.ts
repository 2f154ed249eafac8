import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCollector, type Collector } from '@agentrt/collector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../main.js';

const T0 = Date.now() - 60_000;
const TRACE = 'aa'.repeat(16);
const ns = (ms: number): string => (BigInt(Math.round(ms * 1000)) * 1000n).toString();

function otlpBody() {
  const span = (
    spanId: string,
    parent: string | undefined,
    name: string,
    startMs: number,
    durMs: number,
    attrs: Record<string, string | number>,
    error = false,
  ) => ({
    traceId: TRACE,
    spanId,
    ...(parent ? { parentSpanId: parent } : {}),
    name,
    kind: parent ? 3 : 2,
    startTimeUnixNano: ns(startMs),
    endTimeUnixNano: ns(startMs + durMs),
    attributes: Object.entries(attrs).map(([key, v]) => ({
      key,
      value: typeof v === 'number' ? { intValue: v } : { stringValue: v },
    })),
    status: error ? { code: 2, message: 'tool failed' } : {},
  });
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'cli-agent' } }] },
        scopeSpans: [
          {
            scope: { name: 'cli-test' },
            spans: [
              span('0000000000000001', undefined, 'invoke_agent weather', T0, 1000, {
                'session.id': 'cli-session',
              }),
              span('0000000000000002', '0000000000000001', 'chat claude', T0 + 10, 600, {
                'session.id': 'cli-session',
                'gen_ai.request.model': 'claude',
                'gen_ai.usage.input_tokens': 40,
                'gen_ai.usage.output_tokens': 9,
              }),
              span(
                '0000000000000003',
                '0000000000000001',
                'execute_tool get_weather',
                T0 + 650,
                300,
                { 'session.id': 'cli-session' },
                true,
              ),
            ],
          },
        ],
      },
    ],
  };
}

async function run(args: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, {
    stdout: (t) => out.push(t),
    stderr: (t) => err.push(t),
    env,
    cwd: process.cwd(),
  });
  return { code, out: out.join(''), err: err.join('') };
}

describe('agentrt traces / sessions against a running collector', () => {
  let c: Collector;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agentrt-cli-traces-'));
    // A price for the test's model, so the sessions listing shows a cost.
    const pricesFile = join(dir, 'prices.json');
    writeFileSync(
      pricesFile,
      JSON.stringify({ claude: { inputPerMTok: 100_000, outputPerMTok: 1_000_000 } }),
    );
    c = await createCollector({ dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, pricesFile });
    const res = await fetch(`${c.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(otlpBody()),
    });
    expect(res.status).toBe(200);
  });
  afterAll(async () => {
    await c.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs queries as tables, JSON and stats, with --url and $AGENTRT_COLLECTOR_URL', async () => {
    const table = await run([
      'traces',
      'query',
      'filter attributes.session.id = "cli-session" | sort @timestamp asc',
      '--url',
      c.url,
    ]);
    expect(table.code).toBe(0);
    const lines = table.out.trim().split('\n');
    expect(lines[0]).toMatch(/^time\s+service\s+name\s+duration\s+status\s+traceId\s+spanId$/);
    expect(lines.slice(2).map((l) => l.split(/\s{2,}/)[2])).toEqual([
      'invoke_agent weather',
      'chat claude',
      'execute_tool get_weather',
    ]);
    expect(table.out).toContain('ERROR');
    expect(table.err).toMatch(/3 rows, 3 records scanned/);

    const json = await run(
      [
        'traces',
        'query',
        'stats sum(attributes.gen_ai.usage.input_tokens) as tokens by attributes.gen_ai.request.model as model',
        '--json',
        '--since',
        '1h',
      ],
      { AGENTRT_COLLECTOR_URL: c.url },
    );
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.out);
    expect(parsed.kind).toBe('stats');
    expect(parsed.rows).toContainEqual({ model: 'claude', tokens: 40 });
    const none = await run([
      'traces',
      'query',
      'stats count(*)',
      '--json',
      '--start',
      new Date(T0 + 3_600_000).toISOString(),
      '--url',
      c.url,
    ]);
    expect(JSON.parse(none.out).rows).toEqual([{ 'count(*)': 0 }]);
  });

  it('points at query errors with a caret and exits 1', async () => {
    const r = await run(['traces', 'query', 'filter name ~ "x"', '--url', c.url]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('QuerySyntaxError');
    expect(r.err).toMatch(/\n {2}filter name ~ "x"\n {14}\^/);
  });

  it('shows a trace as a terminal waterfall', async () => {
    const r = await run(['traces', 'show', TRACE, '--url', c.url]);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`trace ${TRACE}  cli-agent`);
    expect(r.out).toMatch(
      /invoke_agent weather: 1\.00s, 3 spans, 1 errors, tokens in\/out 40\/9, session cli-session/,
    );
    const rows = r.out.trim().split('\n').slice(3);
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatch(/^invoke_agent weather\s+│█{40}│\s+1\.00s$/);
    expect(rows[1]).toMatch(/^ {2}chat claude\s+│█{24} {16}│ 600\.0ms$/);
    expect(rows[2]).toMatch(/^ {2}execute_tool get_weather\s+│ {26}█{12} {2}│ 300\.0ms ✗ tool failed$/);
    const json = await run(['traces', 'show', TRACE, '--json', '--url', c.url]);
    expect(JSON.parse(json.out).summary.spanCount).toBe(3);
    const missing = await run(['traces', 'show', 'ab'.repeat(16), '--url', c.url, '--wait', '0']);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/collector answered 404: trace .* not found/);
  });

  it('lists traces and sessions', async () => {
    const list = await run(['traces', 'list', '--status', 'error', '--url', c.url]);
    expect(list.out).toContain(TRACE);
    const sessions = await run(['sessions', '--url', c.url]);
    // 40 × $0.1 + 9 × $1 per token = $13.00
    expect(sessions.out).toMatch(/cli-session\s+cli-agent\s+1\s+3\s+1\s+40\/9\s+\$13\.00/);
    const one = await run(['sessions', 'cli-session', '--url', c.url]);
    expect(one.out).toMatch(/1 traces, 3 spans, 1 errors, tokens in\/out 40\/9, cost \$13\.00/);
    expect(one.out).toMatch(/40\/9\s+\$13\.00/);
    expect(one.out).toContain(TRACE);
    expect(JSON.parse((await run(['sessions', '--json', '--url', c.url])).out).sessions).toHaveLength(1);
  });

  it('prints every span of a session with sessions get --spans (records with --json), and names a missing session', async () => {
    const json = await run(['sessions', 'get', 'cli-session', '--spans', '--json', '--url', c.url]);
    expect(json.code).toBe(0);
    const records = json.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { traceId: string; name: string });
    expect(records.map((r) => r.name)).toEqual([
      'invoke_agent weather',
      'chat claude',
      'execute_tool get_weather',
    ]);
    expect(new Set(records.map((r) => r.traceId))).toEqual(new Set([TRACE]));
    const text = await run(['sessions', 'get', 'cli-session', '--spans', '--url', c.url]);
    expect(text.out.trim().split('\n')).toHaveLength(4);
    expect(text.out).toMatch(/execute_tool get_weather {2}ERROR\n/);
    const missing = await run([
      'sessions',
      'get',
      'no-such-session',
      '--spans',
      '--wait',
      '0',
      '--url',
      c.url,
    ]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('collector answered 404: session "no-such-session" not found');
    expect((await run(['sessions', '--spans', '--url', c.url])).code).toBe(2);
  });

  it('exports a trace to OTLP/JSON lines and imports it into another collector', async () => {
    const file = join(dir, 'trace.jsonl');
    const exp = await run(['traces', 'export', file, '--trace', TRACE, '--url', c.url]);
    expect(exp.code).toBe(0);
    expect(JSON.parse(readFileSync(file, 'utf8').split('\n')[0]!).resourceSpans).toHaveLength(1);
    const other = await createCollector({ dataDir: join(dir, 'other'), host: '127.0.0.1', port: 0 });
    try {
      const imp = await run(['traces', 'import', file, '--url', other.url]);
      expect(imp.out).toMatch(/^imported .*trace\.jsonl: 1 line\(s\), 3 span\(s\), 0 log record\(s\)/);
      const shown = await run(['traces', 'show', TRACE, '--url', other.url]);
      expect(shown.out).toMatch(/3 spans, 1 errors/);
      const bad = join(dir, 'bad.json');
      writeFileSync(bad, '{"hello": 1}');
      const refused = await run(['traces', 'import', bad, '--url', other.url]);
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(
        /bad\.json: nothing imported: collector answered 400: line 1: is not an OTLP/,
      );
      // A truncated copy of another collector's export: its second line is cut; nothing of it lands.
      const fresh = await createCollector({ dataDir: join(dir, 'fresh'), host: '127.0.0.1', port: 0 });
      try {
        const cut = join(dir, 'cut.otlp.jsonl');
        const line = readFileSync(file, 'utf8').split('\n')[0]!;
        writeFileSync(cut, `${line}\n${line.slice(0, 50)}`);
        const half = await run(['traces', 'import', cut, '--url', fresh.url]);
        expect(half.code).toBe(1);
        expect(half.err).toMatch(
          /cut\.otlp\.jsonl: nothing imported: collector answered 400: line 2: not JSON/,
        );
        expect((await run(['traces', 'show', TRACE, '--wait', '0', '--url', fresh.url])).code).toBe(1);
      } finally {
        await fresh.close();
      }
    } finally {
      await other.close();
    }
  });

  it('reports usage mistakes and an unreachable collector clearly', async () => {
    expect((await run(['traces'])).code).toBe(2);
    expect((await run(['traces', 'show', 'xyz'])).err).toMatch(/32 hex characters/);
    expect((await run(['traces', 'query', 'limit 1', '--since', 'yesterday'])).err).toMatch(
      /--since must be a duration/,
    );
    const down = await run(['traces', 'query', 'limit 1', '--url', 'http://127.0.0.1:9']);
    expect(down.code).toBe(1);
    expect(down.err).toMatch(/cannot reach the collector at http:\/\/127\.0\.0\.1:9 .*agentrt collector/);
  });
});

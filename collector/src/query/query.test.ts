import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeTraceRequestJson } from '../otlp/decode-json.js';
import { type SpanStore, createSpanStore } from '../store/sqlite/span-store.js';
import { hex, jsonRequest, jsonSpan, tempDir } from '../testing.test-util.js';
import { discFraction, runQuery } from './engine.js';
import { parseQuery } from './parser.js';
import { QueryError } from './query-error.js';

const T0 = Date.UTC(2026, 10, 21, 12, 0, 0);

function errorOf(q: string) {
  try {
    parseQuery(q);
  } catch (error) {
    expect(error).toBeInstanceOf(QueryError);
    return (error as QueryError).toBody(q);
  }
  throw new Error(`query parsed: ${q}`);
}

describe('query parser', () => {
  it('parses pipelines of every command', () => {
    const cmds = parseQuery(
      'filter attributes.session.id = "s1" and durationNano > 1e9 | fields name, durationNano as d | stats count(*), pct(durationNano, 95) by name, bin(5m) | sort d desc | limit 20',
    );
    expect(cmds.map((c) => c.type)).toEqual(['filter', 'fields', 'stats', 'sort', 'limit']);
    expect(cmds[0]).toMatchObject({
      expr: {
        type: 'and',
        left: { type: 'cmp', field: 'attributes.session.id', value: 's1' },
        right: { value: 1e9 },
      },
    });
    expect(cmds[2]).toMatchObject({ by: [{ type: 'field' }, { type: 'bin', ms: 300_000, name: 'bin(5m)' }] });
  });

  it('points at the position and says what was expected', () => {
    expect(errorOf('filter name = ')).toMatchObject({
      error: 'QuerySyntaxError',
      position: 14,
      line: 1,
      column: 15,
      expected: expect.arrayContaining(['a string', 'a number']),
    });
    expect(errorOf('filter name = "a"\n| sort')).toMatchObject({
      line: 2,
      column: 7,
      expected: ['a field name'],
    });
    expect(errorOf('fliter x = 1')).toMatchObject({
      position: 0,
      expected: expect.arrayContaining(['filter', 'stats']),
    });
    expect(errorOf('filter x = "open')).toMatchObject({ position: 11, message: 'unterminated string' });
    expect(errorOf('stats avg(x) by bin(5)')).toMatchObject({ position: 20 });
    expect(errorOf('limit 0').message).toMatch(/whole number from 1 to 10000/);
    expect(errorOf('filter x like /(/').message).toMatch(/invalid regular expression/);
    expect(errorOf('filter (a = 1').expected).toEqual(["')'"]);
    expect(errorOf('filter a = 1 b').expected).toEqual(["'|'", 'end of query']);
  });
});

describe('query engine', () => {
  let store: SpanStore;
  let tmp: ReturnType<typeof tempDir>;
  const q = (query: string, opts = {}) => runQuery(store.db, query, opts);

  beforeAll(() => {
    tmp = tempDir();
    store = createSpanStore({ dataDir: tmp.dir });
    const spans = [];
    for (let i = 0; i < 40; i++) {
      const traceId = hex(1000 + Math.floor(i / 4), 16);
      const root = i % 4 === 0;
      spans.push(
        jsonSpan({
          traceId,
          spanId: hex(i + 1, 8),
          parentSpanId: root ? undefined : hex(i - (i % 4) + 1, 8),
          name: root ? 'invoke_agent weather' : i % 4 === 3 ? 'execute_tool get_weather' : 'chat claude',
          startMs: T0 + i * 60_000,
          durationMs: (i + 1) * 100,
          status: i === 7 ? 2 : 0,
          kind: root ? 2 : 3,
          attributes: {
            'session.id': `s${i % 2}`,
            ...(root || i % 4 === 3
              ? {}
              : { 'gen_ai.request.model': i % 3 ? 'claude' : 'nova', 'gen_ai.usage.input_tokens': i }),
            ...(i === 5 ? { 'gen_ai.prompt': 'What is the weather in Paris?' } : {}),
          },
        }),
      );
    }
    const req = jsonRequest('weather-agent', spans);
    // One span with a nested kvlist attribute and a __proto__ key.
    (req.resourceSpans as { scopeSpans: { spans: unknown[] }[] }[])[0]!.scopeSpans[0]!.spans.push({
      ...jsonSpan({
        traceId: hex(9999, 16),
        spanId: hex(9999, 8),
        name: 'nested',
        startMs: T0 - 1000,
        durationMs: 1,
      }),
      attributes: [
        {
          key: 'http',
          value: { kvlistValue: { values: [{ key: 'route', value: { stringValue: '/invocations' } }] } },
        },
        { key: '__proto__', value: { stringValue: 'x' } },
      ],
    });
    store.insertBatch(decodeTraceRequestJson(JSON.stringify(req)).spans);
  });
  afterAll(() => {
    store.close();
    tmp.remove();
  });

  it('filters by session and duration (pushed down), newest first, with default columns', () => {
    const r = q('filter attributes.session.id = "s1" and durationNano > 3e9');
    expect(r.kind).toBe('spans');
    expect(r.rows.map((x) => x.spanId)).toEqual([39, 37, 35, 33, 31].map((i) => hex(i + 1, 8)));
    // Both conditions narrow in SQL; only the five matching rows are read.
    expect(r.scanned).toBe(5);
    expect(r.columns).toContain('@message');
    expect((r.rows[0]!['@message'] as { attributes: Record<string, unknown> }).attributes['session.id']).toBe(
      's1',
    );
    expect(r.rows[0]!['resource.attributes.service.name']).toBe('weather-agent');
  });

  it('supports like (string and regex), in, ispresent, not, or and parentheses', () => {
    expect(q('filter attributes.gen_ai.prompt like "Paris"').rows).toHaveLength(1);
    expect(q('filter name like /^EXECUTE_tool/i').rows).toHaveLength(10);
    expect(q('filter name not like "chat"').rows).toHaveLength(21);
    expect(q('filter attributes.gen_ai.request.model in ["nova", "other"]').rows).toHaveLength(6);
    expect(q('filter ispresent(attributes.gen_ai.request.model)').rows).toHaveLength(20);
    expect(q('filter not ispresent(attributes.gen_ai.request.model)').rows).toHaveLength(21);
    expect(q('filter (name = "nested" or status.code = 2) and kind != "SERVER"').rows).toHaveLength(2);
    expect(q('filter status.code = "STATUS_CODE_ERROR"').rows.map((r) => r.spanId)).toEqual([hex(8, 8)]);
    expect(q('filter status.code = 2 | fields spanId').rows).toEqual([{ spanId: hex(8, 8) }]);
    expect(q('filter traceId = "' + hex(1000, 16).toUpperCase() + '"').rows).toHaveLength(4);
    expect(q('filter attributes.gen_ai.usage.input_tokens >= 37').rows).toHaveLength(2);
  });

  it('looks up nested kvlist values by dotted key and never the prototype', () => {
    expect(q('filter attributes.http.route = "/invocations" | fields name').rows).toEqual([
      { name: 'nested' },
    ]);
    expect(q('filter ispresent(attributes.constructor) | fields name').rows).toEqual([]);
    expect(q('filter attributes.__proto__ = "x" | fields name').rows).toEqual([{ name: 'nested' }]);
  });

  it('projects fields with aliases, sorts and limits', () => {
    const r = q(
      'filter name = "chat claude" | fields name, durationNano as d, attributes.gen_ai.request.model as model | sort d desc | limit 3',
    );
    expect(r.columns).toEqual(['name', 'd', 'model']);
    expect(r.rows.map((x) => x.d)).toEqual([3.9e9, 3.8e9, 3.5e9]);
    expect(q('fields name | sort @timestamp asc | limit 1').rows).toEqual([{ name: 'nested' }]);
    expect(q('fields name, @timestamp | limit 2').rows.map((x) => x['@timestamp'])).toEqual([
      T0 + 39 * 60_000,
      T0 + 38 * 60_000,
    ]);
  });

  it('does arithmetic in fields, stats and sort (`/` divides there; a regex only after =~ or like)', () => {
    const r = q(
      'filter name = "chat claude" | fields durationNano / 1e6 as ms, (durationNano + 1e8) / 1e9 | sort ms desc | limit 2',
    );
    expect(r.columns).toEqual(['ms', '(durationNano + 1e8) / 1e9']);
    expect(r.rows).toEqual([
      { ms: 3900, '(durationNano + 1e8) / 1e9': 4 },
      { ms: 3800, '(durationNano + 1e8) / 1e9': 3.9 },
    ]);
    const stats = q(
      'filter name = "chat claude" | stats avg(durationNano / 1e6) as avg_ms, max(durationNano * 2 - 1) by attributes.gen_ai.request.model as model | sort model',
    );
    expect(stats.rows.map((x) => x.model)).toEqual(['claude', 'nova']);
    expect(stats.rows.every((x) => typeof x.avg_ms === 'number' && (x.avg_ms as number) > 100)).toBe(true);
    expect(stats.columns).toContain('max(durationNano * 2 - 1)');
    // Sorted by a computed key; a missing operand gives null (sorted last), so does x / 0.
    const sorted = q(
      'sort durationNano * -1 | fields spanId, attributes.gen_ai.usage.input_tokens / 0 as z | limit 1',
    );
    expect(sorted.rows).toEqual([{ spanId: hex(40, 8), z: null }]);
    expect(q('filter name =~ /^chat/ | stats count(*)').rows).toEqual([{ 'count(*)': 20 }]);
  });

  it('refuses a field no span record has (a typo read null on every row), naming the fields there are', () => {
    for (const query of [
      'fields durationMs',
      'stats avg(duration) by name',
      'filter attribute.model = "x"',
      'sort ms',
    ]) {
      let error: unknown;
      try {
        q(query);
      } catch (e) {
        error = e;
      }
      expect(error, query).toBeInstanceOf(QueryError);
      expect((error as QueryError).message).toMatch(
        /^unknown field '\w+(\.\w+)?': a field is one of @timestamp, .*durationNano/,
      );
    }
    // Columns the query names itself are fields too; so is any path under a record field.
    expect(q('fields durationNano / 1e6 as ms | sort ms desc | limit 1').rows).toEqual([{ ms: 4000 }]);
    expect(q('stats count(*) as n by name | sort n desc | limit 1').rows[0]!.n).toBe(20);
    expect(q('filter attributes.no.such.key = 1').rows).toEqual([]);
  });

  it('computes stats by field and by time bin', () => {
    const byModel = q(
      'filter ispresent(attributes.gen_ai.request.model) | stats count(*) as n, sum(attributes.gen_ai.usage.input_tokens) as tokens, avg(durationNano), min(durationNano), max(durationNano), pct(durationNano, 50) by attributes.gen_ai.request.model as model | sort n desc',
    );
    expect(byModel.kind).toBe('stats');
    expect(byModel.columns).toEqual([
      'model',
      'n',
      'tokens',
      'avg(durationNano)',
      'min(durationNano)',
      'max(durationNano)',
      'pct(durationNano, 50)',
    ]);
    const claude = byModel.rows.find((r) => r.model === 'claude')!;
    const nova = byModel.rows.find((r) => r.model === 'nova')!;
    expect(claude.n).toBe(14);
    expect(nova.n).toBe(6);
    expect((claude.tokens as number) + (nova.tokens as number)).toBe(
      [...Array(40).keys()].filter((i) => i % 4 === 1 || i % 4 === 2).reduce((a, b) => a + b, 0),
    );
    expect(nova['min(durationNano)']).toBe(7e8);
    const bins = q('stats count(*) by bin(10m)');
    expect(bins.timeColumn).toBe('bin(10m)');
    expect(bins.rows.slice(1, 3)).toEqual([
      { 'bin(10m)': T0, 'count(*)': 10 },
      { 'bin(10m)': T0 + 600_000, 'count(*)': 10 },
    ]);
    expect(q('stats count(*)').rows).toEqual([{ 'count(*)': 41 }]);
    expect(q('filter name = "none" | stats count(*), avg(durationNano)').rows).toEqual([
      { 'count(*)': 0, 'avg(durationNano)': null },
    ]);
    expect(q('stats count_distinct(traceId) as traces').rows).toEqual([{ traces: 11 }]);
    const top = q('stats count(*) by name | sort count(*) desc | limit 1');
    expect(top.rows).toEqual([{ name: 'chat claude', 'count(*)': 20 }]);
  });

  it('answers stats over columns in SQL exactly as over the records', () => {
    // `filter name like /./` matches every span but runs in JS, so it forces the record path.
    const sorted = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).sort();
    for (const stats of [
      'stats count(*), count(attributes.gen_ai.request.model), count_distinct(attributes.gen_ai.request.model), sum(attributes.gen_ai.usage.input_tokens), avg(durationNano), min(durationNano), max(durationNano), pct(durationNano, 95), pct(attributes.gen_ai.usage.input_tokens, 50) by attributes.gen_ai.request.model',
      'stats count(*), pct(durationNano, 50), avg(attributes.gen_ai.usage.input_tokens) by bin(10m)',
      'stats sum(attributes.gen_ai.usage.input_tokens), pct(durationNano, 90) by name, kind',
      'stats pct(durationNano, 99.9), max(@timestamp), min(attributes.gen_ai.usage.input_tokens)',
    ]) {
      for (const filter of [
        '',
        'filter ispresent(attributes.gen_ai.request.model) | ',
        'filter not ispresent(attributes.gen_ai.request.model) | ',
        'filter attributes.gen_ai.request.model = "claude" and durationNano > 1e9 | ',
        'filter name = "none" | ',
      ]) {
        const inSql = q(filter + stats);
        const inJs = q(`${filter}filter name like /./ | ${stats}`);
        expect(sorted(inSql.rows), filter + stats).toEqual(sorted(inJs.rows));
        expect(inSql.columns).toEqual(inJs.columns);
      }
    }
    expect(q('filter ispresent(attributes.gen_ai.request.model) | stats count(*)').scanned).toBe(20);
  });

  it('picks the nearest-rank value through percentile_disc() for any count and percentile', () => {
    const db = new DatabaseSync(':memory:');
    try {
      db.exec('CREATE TABLE v (x)');
      const insert = db.prepare('INSERT INTO v VALUES (?)');
      const disc = db.prepare('SELECT percentile_disc(x, ?) AS x FROM v');
      const values: number[] = [];
      for (let n = 1; n <= 120; n++) {
        // Duplicates and a spread of magnitudes, in no order.
        const x = ((n * 7919) % 97) * 1e6 + (n % 3);
        insert.run(x);
        values.push(x);
        const ordered = [...values].sort((a, b) => a - b);
        for (const p of [0.1, 1, 25, 33.3, 50, 66.7, 90, 95, 99, 99.9, 100]) {
          const k = Math.max(1, Math.ceil((p / 100) * n)) - 1;
          expect((disc.get(discFraction(k, n)) as { x: number }).x, `n=${n} p=${p}`).toBe(ordered[k]);
        }
      }
    } finally {
      db.close();
    }
  });

  it('reads GenAI fields from the records once a span holds a value its column cannot', () => {
    const tmpOdd = tempDir();
    const odd = createSpanStore({ dataDir: tmpOdd.dir });
    try {
      const span = (i: number, attributes: Record<string, string | number>) =>
        jsonSpan({
          traceId: hex(7000, 16),
          spanId: hex(i + 1, 8),
          name: 'chat',
          startMs: T0 + i,
          durationMs: 1,
          attributes,
        });
      const put = (spans: Record<string, unknown>[]) =>
        odd.insertBatch(decodeTraceRequestJson(JSON.stringify(jsonRequest('odd', spans))).spans);
      put([span(0, { 'gen_ai.request.model': 'm', 'gen_ai.usage.input_tokens': 5 })]);
      const byModel =
        'stats count(*), sum(attributes.gen_ai.usage.input_tokens) as t by attributes.gen_ai.request.model as m';
      expect(runQuery(odd.db, byModel).rows).toEqual([{ m: 'm', 'count(*)': 1, t: 5 }]);
      // A numeric model name and a token count sent as a string: the query language still sees them.
      put([span(1, { 'gen_ai.request.model': 7, 'gen_ai.usage.input_tokens': '6' })]);
      expect(runQuery(odd.db, byModel).rows).toEqual([
        { m: 'm', 'count(*)': 1, t: 5 },
        { m: 7, 'count(*)': 1, t: 6 },
      ]);
      expect(runQuery(odd.db, 'filter attributes.gen_ai.request.model = "7" | fields spanId').rows).toEqual([
        { spanId: hex(2, 8) },
      ]);
    } finally {
      odd.close();
      tmpOdd.remove();
    }
  });

  it('restricts to the time range', () => {
    const r = q('stats count(*)', { startMs: T0 + 10 * 60_000, endMs: T0 + 20 * 60_000 });
    expect(r.rows).toEqual([{ 'count(*)': 10 }]);
  });

  it('reports run-time problems as QueryError with a position', () => {
    expect(() => q('filter name = ')).toThrow(QueryError);
  });

  it('stops a scan that runs past its time budget with a hint', () => {
    const tmpMany = tempDir();
    const many = createSpanStore({ dataDir: tmpMany.dir });
    try {
      const spans = Array.from({ length: 600 }, (_, i) =>
        jsonSpan({
          traceId: hex(5000 + i, 16),
          spanId: hex(i + 1, 8),
          name: 'x',
          startMs: T0 + i,
          durationMs: 1,
        }),
      );
      many.insertBatch(decodeTraceRequestJson(JSON.stringify(jsonRequest('budget', spans))).spans);
      let error: QueryError | undefined;
      try {
        runQuery(many.db, 'stats count(*)', { maxQueryMs: -1 });
      } catch (e) {
        error = e as QueryError;
      }
      expect(error).toBeInstanceOf(QueryError);
      expect(error!.toBody('stats count(*)')).toMatchObject({
        error: 'QueryError',
        message: expect.stringMatching(/stopped after .* add|narrow it with a time range/),
      });
      expect(runQuery(many.db, 'stats count(*)').rows).toEqual([{ 'count(*)': 600 }]);
    } finally {
      many.close();
      tmpMany.remove();
    }
  });
});

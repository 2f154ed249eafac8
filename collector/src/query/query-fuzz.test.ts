import type { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeTraceRequestJson } from '../otlp/decode-json.js';
import { type SpanStore, createSpanStore } from '../store/sqlite/span-store.js';
import { hex, jsonRequest, jsonSpan, tempDir } from '../testing.test-util.js';
import { runQuery } from './engine.js';
import { SPAN_COLUMNS } from './plan.js';
import { QueryError } from './query-error.js';

// The only SQL the engine may send: these words, closed-set identifiers, generated aliases,
// placeholders, a few constant numbers and operators. No string literal, comment or `;` at all.
const WORDS = new Set(
  (
    'SELECT FROM WHERE AND IN IS NOT NULL AS ORDER BY ASC DESC LIMIT OFFSET GROUP DISTINCT OVER PARTITION ' +
    'EXPLAIN QUERY PLAN count total avg min max coalesce percentile_disc row_number ceil OR ' +
    'agentrt_deadline_check'
  ).split(' '),
);
const IDENTS = new Set<string>([...SPAN_COLUMNS, 'spans', 'n', 'v', 'rn', 'c']);
const ALIAS = /^[kac]\d+$/;
const NUMBERS = new Set(['1', '100.0']);
/** Constant statements (no plan involved). */
const CONSTANT = new Set(['SELECT 1 FROM spans WHERE hot_odd = 1 LIMIT 1', 'SELECT percentile_disc(1, 0.5)']);
const TOKEN = /\s+|"((?:[^"]|"")*)"|[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|->|!=|<=|>=|[?(),*/=<>&]|./gy;

/** Throws unless `text` is made only of the planned shape's tokens. */
function assertPlannedShape(text: string): void {
  if (CONSTANT.has(text)) return;
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(text); m && m[0]; m = TOKEN.exec(text)) {
    const t = m[0];
    if (/^\s+$/.test(t)) continue;
    if (m[1] !== undefined) {
      const name = m[1].replaceAll('""', '"');
      if (!IDENTS.has(name) && !ALIAS.test(name))
        throw new Error(`identifier ${t} outside the plan in: ${text}`);
    } else if (/^[A-Za-z_]/.test(t)) {
      if (!WORDS.has(t)) throw new Error(`word ${t} outside the plan in: ${text}`);
    } else if (/^\d/.test(t)) {
      if (!NUMBERS.has(t)) throw new Error(`number ${t} spliced into: ${text}`);
    } else if (!['?', '(', ')', ',', '*', '/', '=', '!=', '<', '<=', '>', '>=', '->', '&'].includes(t)) {
      throw new Error(`character ${JSON.stringify(t)} outside the plan in: ${text}`);
    }
  }
}

/** The store's connection, recording every SQL text prepared on it. */
function recording(db: DatabaseSync, seen: string[]): DatabaseSync {
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'prepare')
        return (text: string) => {
          seen.push(text);
          return target.prepare(text);
        };
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

// Injections as reported in issue #14 and variations: quotes of every kind in field names,
// UNION, stacked statements, recursive CTEs, comments, JSON-path breakers.
const INJECTIONS = [
  "`attributes.x' ) UNION ALL SELECT name FROM sqlite_master --`",
  "`attributes.a'||(SELECT group_concat(doc) FROM spans)||'`",
  "`attributes.x'); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c; --`",
  "`resource.attributes.k' UNION ALL SELECT sql FROM sqlite_schema --`",
  '`attributes.a"b`',
  '`attributes.a\\b`',
  "`attributes.$[0]'`",
  '`attributes.x" ) OR 1=1 --`',
  "`status.message'--`",
  '`a.b c`',
  "`attributes.'`",
  '`attributes.`',
  '`attributes.x*/ SELECT 1 /*`',
];
const VALUES = [
  "'x'' OR 1=1 --'",
  '"\' UNION ALL SELECT 1 --"',
  '"\\u0000"',
  '1e308',
  '-0',
  'null',
  'true',
  '"%_\\\\"',
  '"\\"; DROP TABLE spans; --"',
];

/** Seeded PRNG (mulberry32), so a failure reproduces. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomQuery(r: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const chars = `"'\`[]\\;-/*()|=<>!~,.$@ aZ09_\n\t%\u0000é🙂`;
  const junk = (): string => Array.from({ length: Math.floor(r() * 12) }, () => pick([...chars])).join('');
  const fields = [
    'name',
    'traceId',
    'durationNano',
    '@timestamp',
    'status.code',
    'kind',
    'attributes.session.id',
    'attributes.gen_ai.request.model',
    'attributes.gen_ai.usage.input_tokens',
    'resource.attributes.service.name',
    'status.message',
    '@message',
    ...INJECTIONS,
    () => `\`attributes.${junk()}\``,
    () => `\`${junk()}\``,
  ];
  const field = (): string => {
    const f = pick(fields);
    return typeof f === 'function' ? f() : f;
  };
  const value = (): string =>
    pick(
      [...VALUES, () => JSON.stringify(junk()), () => String(r() * 1e6)].map((v) =>
        typeof v === 'function' ? v() : v,
      ),
    );
  const cond = (d: number): string => {
    if (d > 0 && r() < 0.3) return `(${cond(d - 1)} ${pick(['and', 'or'])} ${cond(d - 1)})`;
    if (d > 0 && r() < 0.1) return `not ${cond(d - 1)}`;
    return pick([
      () => `${field()} ${pick(['=', '!=', '<', '<=', '>', '>='])} ${value()}`,
      () => `${field()} in [${Array.from({ length: 1 + Math.floor(r() * 4) }, value).join(', ')}]`,
      () => `${field()} ${pick(['like', 'not like', '=~'])} ${pick([value(), '/a.*/i', '/^(a+)+$/'])}`,
      () => `ispresent(${field()})`,
      () => `isempty(${field()})`,
    ])();
  };
  const command = (): string =>
    pick([
      () => `filter ${cond(3)}`,
      () => `fields ${field()}, ${field()} as x`,
      () =>
        `stats count(*), ${pick(['avg', 'sum', 'min', 'max', 'count', 'count_distinct'])}(${field()}), pct(${field()}, ${Math.floor(r() * 101)}) by ${pick([field(), 'bin(5m)', `${field()}, bin(1h)`])}`,
      () => `sort ${field()} ${pick(['asc', 'desc', ''])}`,
      () => `limit ${1 + Math.floor(r() * 50)}`,
      () => junk(),
    ])();
  return Array.from({ length: 1 + Math.floor(r() * 4) }, command).join(' | ');
}

describe('query fuzz: no query reaches SQL outside the planned shape', () => {
  let store: SpanStore;
  let tmp: ReturnType<typeof tempDir>;
  const T0 = Date.UTC(2026, 10, 21, 12);

  beforeAll(() => {
    tmp = tempDir();
    store = createSpanStore({ dataDir: tmp.dir });
    const spans = Array.from({ length: 30 }, (_, i) =>
      jsonSpan({
        traceId: hex(1 + (i % 5), 16),
        spanId: hex(i + 1, 8),
        name: i % 3 ? 'chat claude' : "it's a name",
        startMs: T0 + i * 1000,
        durationMs: i + 1,
        attributes: {
          'session.id': `s${i % 2}`,
          "x' ) UNION ALL SELECT name FROM sqlite_master --": 'key with quotes',
          ...(i % 2 ? { 'gen_ai.request.model': 'claude', 'gen_ai.usage.input_tokens': i } : {}),
        },
      }),
    );
    store.insertBatch(decodeTraceRequestJson(JSON.stringify(jsonRequest('svc', spans))).spans);
  });
  afterAll(() => {
    store.close();
    tmp.remove();
  });

  /** Runs a query; returns its rows or the QueryError. Anything else fails the test. */
  function run(query: string, seen: string[]): { rows?: unknown[]; error?: QueryError } {
    try {
      return { rows: runQuery(recording(store.db, seen), query, { maxQueryMs: 5000 }).rows };
    } catch (error) {
      if (error instanceof QueryError) return { error };
      throw new Error(`query ${JSON.stringify(query)} failed outside the query language: ${String(error)}`, {
        cause: error,
      });
    }
  }

  it('answers the reported injections as data: a field named with quotes, never a second statement', () => {
    const seen: string[] = [];
    for (const f of INJECTIONS) {
      for (const q of [`fields ${f}`, `filter ${f} = 1`, `filter ispresent(${f})`, `stats count(*) by ${f}`])
        run(q, seen);
    }
    seen.forEach(assertPlannedShape);
    // The key that holds the injection text is just an attribute key: it reads its own value.
    const r = run(
      "fields `attributes.x' ) UNION ALL SELECT name FROM sqlite_master --` as v | limit 2",
      seen,
    );
    expect(r.rows).toEqual([{ v: 'key with quotes' }, { v: 'key with quotes' }]);
    // Nothing from sqlite_master or a recursive CTE came back, and the store still answers.
    expect(JSON.stringify(run('filter name = "chat claude" | stats count(*)', seen).rows)).toBe(
      '[{"count(*)":20}]',
    );
  });

  it('keeps 2000 random and adversarial queries to the planned shape', () => {
    const r = rng(14);
    const seen: string[] = [];
    let answered = 0;
    for (let i = 0; i < 2000; i++) {
      const out = run(randomQuery(r), seen);
      if (out.rows) answered++;
    }
    for (const text of seen) assertPlannedShape(text);
    // The generator is not all noise: a good share parses and runs.
    expect(answered).toBeGreaterThan(200);
    expect(seen.length).toBeGreaterThan(1000);
  });

  it('the shape check itself catches a spliced literal, comment or foreign table', () => {
    expect(() => assertPlannedShape(`SELECT "doc" -> '$.a' FROM "spans"`)).toThrow(/character/);
    expect(() => assertPlannedShape('SELECT "doc" FROM "sqlite_master"')).toThrow(/identifier/);
    expect(() => assertPlannedShape('SELECT "doc" FROM "spans" UNION SELECT 1')).toThrow(/word UNION/);
    expect(() => assertPlannedShape('SELECT "doc" FROM "spans" LIMIT 5')).toThrow(/number 5/);
    expect(() => assertPlannedShape('SELECT "doc" FROM "spans" -- x')).toThrow(/character/);
  });

  it('refuses deep nesting, huge value lists and too many conditions with a QueryError', () => {
    const seen: string[] = [];
    const deep = `filter ${'('.repeat(10_000)}name = "a"${')'.repeat(10_000)}`;
    expect(run(deep, seen).error?.message).toMatch(/nests deeper than 64/);
    expect(run(`filter ${'not '.repeat(10_000)}name = "a"`, seen).error?.message).toMatch(/nests deeper/);
    const big = `filter name in [${Array.from({ length: 40_000 }, (_, i) => i).join(',')}]`;
    expect(run(big, seen).error?.message).toMatch(/more than 5000 values/);
    const many = `filter ${Array.from({ length: 2000 }, () => 'name = "a"').join(' or ')}`;
    expect(run(many, seen).error?.message).toMatch(/more than 1000 conditions/);
    // Just under the limits runs.
    const ok = `filter name in [${Array.from({ length: 4000 }, (_, i) => JSON.stringify(`n${i}`)).join(',')}, "chat claude"] | stats count(*)`;
    expect(run(ok, seen).rows).toEqual([{ 'count(*)': 20 }]);
    seen.forEach(assertPlannedShape);
  });
});

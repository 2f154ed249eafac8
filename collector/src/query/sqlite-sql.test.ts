import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { ident, jsonPath, predicateSql, quoteIdent, scanSql, sql } from './sqlite-sql.js';

describe('quoteIdent', () => {
  // Every character that quotes or ends something in SQLite's tokenizer, alone and in pairs.
  const QUOTES = ['"', "'", '`', '[', ']', '\\', ';', '-', '/', '*', '\n', '\r', '\t', ' ', '\u2028'];
  const names = [
    ...QUOTES,
    ...QUOTES.flatMap((a) => QUOTES.map((b) => `x${a}${b}y`)),
    'a"b',
    '""',
    '"; DROP TABLE t; --',
    "a' UNION ALL SELECT name FROM sqlite_master --",
    '` or 1=1 `',
    '[x]',
    'é ü 字 🙂',
  ];

  it('round-trips every quote character as one identifier SQLite reads back unchanged', () => {
    const db = new DatabaseSync(':memory:');
    for (const name of names) {
      // As a column name of a real table and as a result alias: SQLite must see exactly `name`.
      db.exec(`CREATE TABLE t (${quoteIdent(name)} TEXT)`);
      const cols = db.prepare('PRAGMA table_info(t)').all() as { name: string }[];
      expect(cols.map((c) => c.name)).toEqual([name]);
      db.prepare(`INSERT INTO t (${quoteIdent(name)}) VALUES (?)`).run('v');
      const row = db.prepare(`SELECT ${quoteIdent(name)} AS ${quoteIdent(name)} FROM t`).get() as Record<
        string,
        string
      >;
      expect(Object.keys(row)).toEqual([name]);
      expect(row[name]).toBe('v');
      db.exec('DROP TABLE t');
    }
    db.close();
  });

  it('refuses names SQLite cannot carry instead of mangling them', () => {
    expect(() => quoteIdent('')).toThrow(TypeError);
    expect(() => quoteIdent('a\0b')).toThrow(TypeError);
  });
});

describe('SQL fragments', () => {
  it('binds every value as a parameter, never as text', () => {
    const evil = "x' OR 1=1 --";
    const f = sql`SELECT ${ident('name')} FROM ${ident('spans')} WHERE ${ident('name')} = ${evil} LIMIT ${10n}`;
    expect(f.text).toBe('SELECT "name" FROM "spans" WHERE "name" = ? LIMIT ?');
    expect(f.params).toEqual([evil, 10n]);
  });

  it('refuses a column outside the closed set even in a hand-built plan', () => {
    expect(() =>
      predicateSql({
        type: 'cmp',
        value: { type: 'column', column: 'name; DROP TABLE spans' as 'name' },
        op: '=',
        operand: 1,
      }),
    ).toThrow(/not a span column/);
    expect(() =>
      predicateSql({
        type: 'cmp',
        value: { type: 'column', column: 'name' },
        op: "= 1 OR '" as '=',
        operand: 1,
      }),
    ).toThrow(/not a comparison/);
  });

  it('puts JSON paths into parameters and refuses keys a path cannot hold', () => {
    const f = scanSql({
      where: [],
      select: { type: 'values', values: [{ type: 'json', path: ['attributes', "it's.a key"] }] },
      order: [],
    });
    // Every WHERE starts with the deadline guard (sqlite-deadline.ts): its constants are parameters too.
    expect(f.text).toBe(
      'SELECT "doc" -> ? AS "c0" FROM "spans" WHERE (("id" & ?) != ? OR agentrt_deadline_check())',
    );
    expect(f.params).toEqual(['$.attributes."it\'s.a key"', 255, 0]);
    expect(() => jsonPath(['attributes', 'a"b'])).toThrow(TypeError);
    expect(() => jsonPath(['attributes', 'a\\b'])).toThrow(TypeError);
  });
});

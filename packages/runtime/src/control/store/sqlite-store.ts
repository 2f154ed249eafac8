import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { type Kind, type Kinds, type Store } from '../store.js';

/**
 * The control plane's state in one SQLite file (`node:sqlite`): one table of JSON documents, so the
 * store needs no migrations when a record grows a field. One runtime process at a time.
 */
export function createSqliteStore(dataDir: string): Store {
  mkdirSync(dataDir, { recursive: true });
  const db = new DatabaseSync(join(dataDir, 'runtime.sqlite'));
  db.exec(`
    PRAGMA journal_mode = WAL;
    PRAGMA synchronous = NORMAL;
    CREATE TABLE IF NOT EXISTS docs (
      kind TEXT NOT NULL, id TEXT NOT NULL, parent TEXT NOT NULL DEFAULT '', ord INTEGER NOT NULL DEFAULT 0,
      doc TEXT NOT NULL, PRIMARY KEY (kind, id));
    CREATE INDEX IF NOT EXISTS docs_parent ON docs (kind, parent, ord, id);
  `);
  const getStmt = db.prepare('SELECT doc FROM docs WHERE kind = ? AND id = ?');
  const putStmt = db.prepare(
    'INSERT INTO docs (kind, id, parent, ord, doc) VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, id) DO UPDATE SET doc = excluded.doc, parent = excluded.parent, ord = excluded.ord',
  );
  const delStmt = db.prepare('DELETE FROM docs WHERE kind = ? AND id = ?');
  const delChildren = db.prepare("DELETE FROM docs WHERE parent = ? AND parent <> ''");
  const listAll = db.prepare('SELECT doc FROM docs WHERE kind = ? ORDER BY ord, id LIMIT ? OFFSET ?');
  const listByParent = db.prepare(
    'SELECT doc FROM docs WHERE kind = ? AND parent = ? ORDER BY ord, id LIMIT ? OFFSET ?',
  );
  const countAll = db.prepare('SELECT count(*) AS n FROM docs WHERE kind = ?');
  const countByParent = db.prepare('SELECT count(*) AS n FROM docs WHERE kind = ? AND parent = ?');
  const parse = <T>(row: unknown): T => JSON.parse((row as { doc: string }).doc) as T;
  // Write-through cache of parsed documents: every invoke reads its runtime and version, so the hot
  // path never touches SQLite. Callers treat documents as immutable (they spread, never mutate).
  const cache = new Map<string, unknown>();
  return {
    get: <K extends Kind>(kind: K, id: string) => {
      const key = `${kind}\u0000${id}`;
      if (cache.has(key)) return cache.get(key) as Kinds[K];
      const row = getStmt.get(kind, id);
      const doc = row ? parse<Kinds[K]>(row) : undefined;
      if (doc) cache.set(key, doc);
      return doc;
    },
    put: async (kind, id, doc, parent = '', ord = 0) => {
      putStmt.run(kind, id, parent, ord, JSON.stringify(doc));
      cache.set(`${kind}\u0000${id}`, structuredClone(doc));
    },
    delete: async (kind, id) => {
      delStmt.run(kind, id);
      cache.delete(`${kind}\u0000${id}`);
    },
    deleteChildren: async (parent) => {
      delChildren.run(parent);
      cache.clear();
    },
    list: (kind, { parent, offset, limit }) =>
      (parent === undefined
        ? listAll.all(kind, limit, offset)
        : listByParent.all(kind, parent, limit, offset)
      ).map((row) => parse(row)),
    count: (kind, parent) =>
      Number((parent === undefined ? countAll.get(kind) : countByParent.get(kind, parent))?.n ?? 0),
    close: async () => db.close(),
  };
}

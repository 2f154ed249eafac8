import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { type PinnedArtifact } from '../sessions/artifact.js';

export type RuntimeStatus =
  'CREATING' | 'CREATE_FAILED' | 'UPDATING' | 'UPDATE_FAILED' | 'READY' | 'DELETING' | 'DELETE_FAILED';

/** Everything a version fixes; stored as given (plus the effective lifecycle) and echoed by Get. */
export interface VersionConfig {
  agentRuntimeArtifact: { containerConfiguration?: { containerUri: string }; [k: string]: unknown };
  roleArn: string;
  networkConfiguration: { networkMode: string; [k: string]: unknown };
  lifecycleConfiguration: { idleRuntimeSessionTimeout: number; maxLifetime: number };
  description?: string;
  authorizerConfiguration?: { customJWTAuthorizer?: JwtAuthorizerConfig };
  requestHeaderConfiguration?: { requestHeaderAllowlist?: string[] };
  protocolConfiguration?: { serverProtocol: string };
  metadataConfiguration?: { requireMMDSV2: boolean };
  environmentVariables?: Record<string, string>;
  filesystemConfigurations?: unknown[];
  capacityProviderConfiguration?: { capacityProviderArn: string };
  platformVersion?: string;
}

export interface JwtAuthorizerConfig {
  discoveryUrl: string;
  allowedAudience?: string[];
  allowedClients?: string[];
  allowedScopes?: string[];
}

export interface RuntimeRecord {
  id: string;
  name: string;
  arn: string;
  latestVersion: number;
  status: RuntimeStatus;
  failureReason?: string;
  createdAt: string;
  lastUpdatedAt: string;
  workloadIdentityArn: string;
}

export interface VersionRecord {
  runtimeId: string;
  version: number;
  config: VersionConfig;
  /** What the version runs, fixed once its artifact checked out (absent: a live directory). */
  artifact?: PinnedArtifact;
  status: RuntimeStatus;
  failureReason?: string;
  createdAt: string;
}

export interface EndpointRecord {
  runtimeId: string;
  name: string;
  id: string;
  arn: string;
  liveVersion?: number;
  targetVersion: number;
  description?: string;
  status: RuntimeStatus;
  failureReason?: string;
  createdAt: string;
  lastUpdatedAt: string;
}

interface Kinds {
  runtime: RuntimeRecord;
  version: VersionRecord;
  endpoint: EndpointRecord;
  tags: Record<string, string>;
  idempotency: { fingerprint: string; response: unknown };
}

export type Kind = keyof Kinds;

/**
 * The control plane's state in one SQLite file (`node:sqlite`). Every record is a JSON document
 * keyed by kind and id, with a parent (the runtime id) and an order column for paging, so the
 * store needs no migrations when a record grows a field.
 */
export interface Store {
  get<K extends Kind>(kind: K, id: string): Kinds[K] | undefined;
  put<K extends Kind>(kind: K, id: string, doc: Kinds[K], parent?: string, ord?: number): void;
  delete(kind: Kind, id: string): void;
  /** Deletes every record whose parent is `parent` (a runtime's versions and endpoints). */
  deleteChildren(parent: string): void;
  list<K extends Kind>(kind: K, options: { parent?: string; offset: number; limit: number }): Kinds[K][];
  count(kind: Kind, parent?: string): number;
  close(): void;
}

export function createStore(dataDir: string): Store {
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
    put: (kind, id, doc, parent = '', ord = 0) => {
      putStmt.run(kind, id, parent, ord, JSON.stringify(doc));
      cache.set(`${kind}\u0000${id}`, structuredClone(doc));
    },
    delete: (kind, id) => {
      delStmt.run(kind, id);
      cache.delete(`${kind}\u0000${id}`);
    },
    deleteChildren: (parent) => {
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
    close: () => db.close(),
  };
}

/**
 * Evaluation datasets: JSONL, one item a line — a stored session (`sessionId`), inline span
 * documents (`spans`) or an input to re-run through a runtime (`input`), with what is expected
 * (`expectedTrajectory`, `expectedResponse`, `assertions`). A bad line is a DatasetError naming
 * the file, the line number and the field; blank lines and `#` comments are skipped.
 */
import { readFileSync } from 'node:fs';

export interface DatasetItem {
  /** `id` of the line, else the session id, else `line-<n>`. */
  id: string;
  /** 1-based line in the file (0 for items not from a file). */
  line: number;
  sessionId?: string;
  spans?: unknown[];
  /** The payload to invoke a runtime with (a string becomes `{"prompt": …}`). */
  input?: unknown;
  expectedTrajectory?: string[];
  expectedResponse?: string;
  assertions?: string[];
}

export class DatasetError extends Error {
  override name = 'DatasetError';
}

const KEYS = new Set([
  'id',
  'sessionId',
  'spans',
  'input',
  'expectedTrajectory',
  'expectedResponse',
  'assertions',
]);

type Json = Record<string, unknown>;

function stringList(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((v) => typeof v === 'string') ? (value as string[]) : undefined;
}

/** One line's item; throws a message naming the field (the caller adds file and line). */
function parseItem(obj: Json, line: number): DatasetItem {
  const unknown = Object.keys(obj).find((k) => !KEYS.has(k));
  if (unknown) throw new Error(`unknown field ${JSON.stringify(unknown)} (fields: ${[...KEYS].join(', ')})`);
  const text = (key: string): string | undefined => {
    const v = obj[key];
    if (v !== undefined && (typeof v !== 'string' || v === ''))
      throw new Error(`${key} must be a non-empty string`);
    return v as string | undefined;
  };
  const item: DatasetItem = { id: '', line };
  const sessionId = text('sessionId');
  if (sessionId) item.sessionId = sessionId;
  if (obj.spans !== undefined) {
    if (!Array.isArray(obj.spans) || obj.spans.length === 0)
      throw new Error('spans must be a non-empty list of span documents');
    item.spans = obj.spans;
  }
  if (obj.input !== undefined) item.input = typeof obj.input === 'string' ? { prompt: obj.input } : obj.input;
  if ([item.sessionId, item.spans, item.input].filter((v) => v !== undefined).length !== 1)
    throw new Error('needs exactly one of sessionId, spans or input');
  for (const key of ['expectedTrajectory', 'assertions'] as const) {
    if (obj[key] === undefined) continue;
    const list = stringList(obj[key]);
    if (!list) throw new Error(`${key} must be a list of strings`);
    item[key] = list;
  }
  const expected = text('expectedResponse');
  if (expected) item.expectedResponse = expected;
  item.id = text('id') ?? item.sessionId ?? `line-${line}`;
  return item;
}

/** Parses JSONL text; `source` names the file in errors. Item ids must be unique. */
export function parseDataset(text: string, source: string): DatasetItem[] {
  const items: DatasetItem[] = [];
  const seen = new Map<string, number>();
  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    const trimmed = raw.trim();
    if (!trimmed || trimmed.startsWith('#')) return;
    const fail = (message: string, cause?: unknown): never => {
      throw new DatasetError(`${source}:${line}: ${message}`, { cause });
    };
    let obj: unknown;
    try {
      obj = JSON.parse(trimmed);
    } catch (error) {
      fail(`not JSON (${(error as Error).message})`, error);
    }
    if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) fail('must be a JSON object');
    let item: DatasetItem;
    try {
      item = parseItem(obj as Json, line);
    } catch (error) {
      return fail((error as Error).message, error);
    }
    const earlier = seen.get(item.id);
    if (earlier) fail(`id ${JSON.stringify(item.id)} is already used on line ${earlier}`);
    seen.set(item.id, line);
    items.push(item);
  });
  if (items.length === 0) throw new DatasetError(`${source}: holds no items`);
  return items;
}

export function readDatasetFile(path: string): DatasetItem[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new DatasetError(`${path}: cannot read (${(error as Error).message})`, { cause: error });
  }
  return parseDataset(text, path);
}

/** Items for stored sessions (`--dataset sessions:a,b` or a query's sessions). */
export function sessionItems(sessionIds: readonly string[]): DatasetItem[] {
  return [...new Set(sessionIds)].map((sessionId) => ({ id: sessionId, line: 0, sessionId }));
}

import type { MetricRead } from '../metrics/metric-read.js';
import { type Token, tokenize } from './lexer.js';
import { UNIT_MS } from './parser.js';
import { QueryError, QueryFailure } from './query-error.js';

/**
 * The metrics form of the query language, beside the span commands:
 *
 *   metric <name> [<fn>] [by <attr>, …] [where <attr> = <value> and <attr> != <value> …]
 *          [every <duration>] [since <duration>]
 *
 * e.g. `metric Invocations sum by Name every 1h since 7d` or `metric Latency p95 by Name`. The
 * clauses come in any order after the name (and function); `metrics` is accepted for `metric`.
 */
export interface MetricForm {
  name: string;
  fn?: string;
  by: string[];
  /** `key=value` / `key!=value`, as the metrics API takes them. */
  where: string[];
  stepMs?: number;
  sinceMs?: number;
  /** Offset of the name in the query (what "no metric named …" points at). */
  namePos: number;
}

const CLAUSES = ['by', 'where', 'every', 'since'];
/** Without `since` or a time range in the request: the last hour (as `agentrt metrics`). */
export const DEFAULT_METRIC_RANGE_MS = 3_600_000;

/** Whether a query is in the metrics form (its first word is `metric` or `metrics`). */
export function isMetricForm(src: string): boolean {
  return /^\s*metrics?(\s|$)/i.test(src);
}

/** Parses the metrics form; throws QueryError (with the offset) as the span parser does. */
export function parseMetricForm(src: string): MetricForm {
  const tokens = tokenize(src);
  let i = 0;
  const peek = (): Token => tokens[i]!;
  const next = (): Token => tokens[i++]!;
  const word = (t: Token) => (t.type === 'ident' ? t.text.toLowerCase() : '');
  const describe = (t: Token) => (t.type === 'eof' ? 'the end of the query' : `'${t.text}'`);
  const fail = (expected: string[], t = peek()): never => {
    throw new QueryError(`expected ${expected.join(' or ')} but found ${describe(t)}`, t.pos, expected);
  };
  /** A metric or attribute name: a bare word (dots and dashes allowed) or a quoted string. */
  const nameToken = (what: string): Token => {
    const t = peek();
    if (t.type !== 'ident' && t.type !== 'string') return fail([what]);
    return next();
  };
  const duration = (): number => {
    const t = peek();
    const unit = t.type === 'duration' ? UNIT_MS[t.flags!.toLowerCase()] : undefined;
    if (unit === undefined || !(t.value! > 0)) return fail(['a duration like 30s, 5m, 1h or 7d']);
    next();
    return t.value! * unit;
  };

  if (!['metric', 'metrics'].includes(word(peek()))) fail(["'metric'"]);
  next();
  const name = nameToken('a metric name');
  const form: MetricForm = { name: name.text, by: [], where: [], namePos: name.pos };
  if (peek().type === 'ident' && !CLAUSES.includes(word(peek()))) form.fn = next().text.toLowerCase();
  const seen = new Set<string>();
  while (peek().type !== 'eof') {
    const t = peek();
    const clause = word(t);
    if (!CLAUSES.includes(clause)) fail(CLAUSES.map((c) => `'${c}'`));
    if (seen.has(clause)) throw new QueryError(`'${clause}' is given twice`, t.pos);
    seen.add(clause);
    next();
    if (clause === 'by') {
      do form.by.push(nameToken('an attribute name').text);
      while (peek().type === 'punct' && peek().text === ',' && next());
    } else if (clause === 'where') {
      for (;;) {
        const key = nameToken('an attribute name').text;
        const op = peek();
        if (op.type !== 'punct' || !['=', '==', '!='].includes(op.text)) fail(["'='", "'!='"]);
        next();
        const v = peek();
        if (v.type !== 'ident' && v.type !== 'string' && v.type !== 'number') fail(['a value']);
        next();
        form.where.push(`${key}${op.text === '!=' ? '!=' : '='}${v.text}`);
        if (word(peek()) !== 'and') break;
        next();
      }
    } else if (clause === 'every') form.stepMs = duration();
    else form.sinceMs = duration();
  }
  return form;
}

/**
 * Answers a metrics-form query (on a query thread, through `run`): over `since` back from the
 * request's end (or now), else the request's range, else the last hour. Resolves with the stats rows'
 * JSON. Bad questions are QueryErrors (HTTP 400; an unknown name points at it) or QueryFailures.
 */
export async function runMetricForm(
  src: string,
  run: (read: MetricRead) => Promise<Uint8Array>,
  range: { startMs?: number; endMs?: number },
  nowMs = Date.now(),
): Promise<Uint8Array> {
  const form = parseMetricForm(src);
  const endMs = range.endMs ?? nowMs;
  const startMs =
    form.sinceMs !== undefined ? endMs - form.sinceMs : (range.startMs ?? endMs - DEFAULT_METRIC_RANGE_MS);
  try {
    return await run({
      type: 'rows',
      query: {
        name: form.name,
        by: form.by,
        where: form.where,
        startMs,
        endMs,
        ...(form.fn ? { fn: form.fn } : {}),
        ...(form.stepMs ? { stepMs: form.stepMs } : {}),
      },
    });
  } catch (error) {
    if (error instanceof QueryFailure && error.status === 404)
      throw new QueryError(error.message, form.namePos, [], 'QueryError');
    throw error;
  }
}

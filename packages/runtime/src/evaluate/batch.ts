/**
 * Batch evaluation of a dataset: every item through every evaluator, at most `concurrency` items at
 * once, each item's spans read once. Progress is reported per item; a journal (JSONL, one finished
 * item a line) makes a run resumable: items it holds results of are not evaluated again. An item that
 * cannot be read or re-run is marked errored and the run goes on.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { RuntimeApiError } from '../errors.js';
import { evaluatorArn } from './catalog.js';
import { type DatasetItem } from './dataset.js';
import { type EvaluationResult, runEvaluator } from './evaluate.js';
import { type EvaluateRequest, type ReferenceInput } from './evaluate-request.js';
import { type EvaluationService } from './evaluation-service.js';

export interface ItemOutcome {
  id: string;
  line: number;
  sessionId?: string;
  results: EvaluationResult[];
  /** Why the item has no results (its spans could not be read, its re-run failed). */
  error?: string;
  /** Taken from the journal of an earlier, interrupted run. */
  resumed?: boolean;
}

export interface BatchProgress {
  done: number;
  total: number;
  outcome: ItemOutcome;
}

export interface BatchOptions {
  service: EvaluationService;
  items: readonly DatasetItem[];
  evaluatorIds: readonly string[];
  /** Items evaluated at once (≥ 1). */
  concurrency: number;
  runId: string;
  /** JSONL journal of finished items; those found in it are skipped (resume). */
  journalPath?: string;
  /** Runs an `input` item through a runtime; resolves to the session id whose spans to judge. */
  rerun?: (item: DatasetItem) => Promise<string>;
  /** Store results in the collector (default true). */
  store?: boolean;
  onProgress?: (progress: BatchProgress) => void;
  onWarning?: (message: string) => void;
}

/** Runs `fn` over `items`, at most `limit` at once, results in input order. */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}

/**
 * Finished items of an earlier run. Errored items are left out, so a resumed run tries them again;
 * a torn last line (the run was killed mid-write) is ignored.
 */
export function readJournal(path: string): Map<string, ItemOutcome> {
  const done = new Map<string, ItemOutcome>();
  if (!existsSync(path)) return done;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      const outcome = JSON.parse(line) as ItemOutcome;
      if (typeof outcome.id === 'string' && !outcome.error) done.set(outcome.id, outcome);
    } catch {
      // A line cut short by a kill: that item runs again.
    }
  }
  return done;
}

function referenceOf(item: DatasetItem, sessionId: string): ReferenceInput {
  const ref: ReferenceInput = { context: { sessionId } };
  if (item.expectedTrajectory) ref.expectedTrajectory = item.expectedTrajectory;
  if (item.expectedResponse) ref.expectedResponse = item.expectedResponse;
  if (item.assertions) ref.assertions = item.assertions;
  return ref;
}

function errorResult(evaluatorId: string, sessionId: string, error: unknown): EvaluationResult {
  return {
    evaluatorArn: evaluatorArn(evaluatorId),
    evaluatorId,
    evaluatorName: evaluatorId,
    context: { spanContext: { sessionId } },
    errorCode: error instanceof RuntimeApiError ? error.type : 'EvaluatorError',
    errorMessage: (error as Error).message,
  };
}

async function evaluateItem(item: DatasetItem, opts: BatchOptions): Promise<ItemOutcome> {
  const outcome: ItemOutcome = { id: item.id, line: item.line, results: [] };
  try {
    const sessionId = item.input !== undefined ? await rerunOf(item, opts) : item.sessionId;
    if (sessionId) outcome.sessionId = sessionId;
    const base: EvaluateRequest = {
      evaluatorId: '',
      sessionSpans: item.spans ?? [],
      references: sessionId ? [referenceOf(item, sessionId)] : [],
    };
    const view = await opts.service.session(base);
    outcome.sessionId = view.sessionId;
    if (!sessionId) base.references = [referenceOf(item, view.sessionId)];
    for (const id of opts.evaluatorIds) {
      const results = await runEvaluator(opts.service.evaluator(id), view, base, opts.service.deps).catch(
        (error: unknown) => [errorResult(id, view.sessionId, error)],
      );
      outcome.results.push(...results);
    }
  } catch (error) {
    outcome.error = (error as Error).message;
  }
  return outcome;
}

function rerunOf(item: DatasetItem, opts: BatchOptions): Promise<string> {
  if (!opts.rerun)
    throw new Error(`item ${item.id} has an input to re-run; give a runtime to run it through`);
  return opts.rerun(item);
}

export async function runBatch(opts: BatchOptions): Promise<ItemOutcome[]> {
  const journal = opts.journalPath ? readJournal(opts.journalPath) : new Map<string, ItemOutcome>();
  let done = 0;
  return mapBounded(opts.items, opts.concurrency, async (item) => {
    const earlier = journal.get(item.id);
    const startedMs = Date.now();
    const outcome = earlier ? { ...earlier, resumed: true } : await evaluateItem(item, opts);
    if (!earlier && opts.journalPath) appendFileSync(opts.journalPath, `${JSON.stringify(outcome)}\n`);
    if (!earlier && opts.store !== false) {
      const run = {
        runId: opts.runId,
        itemId: item.id,
        endMs: Date.now(),
        durationMs: Date.now() - startedMs,
      };
      await opts.service
        .record(outcome.results, run)
        .catch((error: unknown) =>
          opts.onWarning?.(`results of ${item.id} not stored: ${(error as Error).message}`),
        );
    }
    opts.onProgress?.({ done: ++done, total: opts.items.length, outcome });
    return outcome;
  });
}

/**
 * The runtime's online evaluation: the rules stored in the control store (CreateOnlineEvaluationConfig),
 * each run as an online evaluator (online.ts) pass after pass. Every pass first reads the rules
 * again, so a rule created, disabled or deleted — through this replica or another — is picked up
 * at the next pass. A rule resumes from its last stored result: sessions that ended while the
 * runtime was down are evaluated once it is back, as far back as the catch-up bound reaches.
 */
import { filtersToQuery } from '../control/online-evaluation.js';
import { type OnlineEvaluationRecord, type Store } from '../control/store.js';
import { type Logger } from '../logger.js';
import { type CollectorLocation } from './collector-spans.js';
import { type EvaluationService } from './evaluation-service.js';
import { type OnlineEvaluator, createOnlineEvaluator } from './online.js';

export interface OnlineRulesOptions {
  store: Store;
  service: EvaluationService;
  collector: CollectorLocation;
  intervalMs: number;
  /** Sessions that ended longer ago than this are not caught up on. */
  catchUpMs: number;
  logger: Logger;
}

export interface OnlineRules {
  /** Runs the rules, a pass every interval, until `stop`. */
  start(): void;
  /** Ends the passes; resolves once the pass in progress has ended. */
  stop(): Promise<void>;
}

const MAX_RULES = 1000;

/** The evaluator of a stored rule; `version` tells an updated record from the one it was made of. */
interface Running {
  version: string;
  evaluator: OnlineEvaluator;
}

function evaluatorOf(record: OnlineEvaluationRecord, opts: OnlineRulesOptions): OnlineEvaluator {
  const filter = filtersToQuery(record.filters);
  const floorMs = Math.max(Date.parse(record.createdAt), Date.now() - opts.catchUpMs);
  return createOnlineEvaluator(
    opts.service,
    opts.collector,
    {
      name: record.id,
      samplingPercent: record.samplingPercentage,
      evaluatorIds: record.evaluatorIds,
      serviceNames: record.serviceNames,
      idleMs: Math.round(record.sessionTimeoutMinutes * 60_000),
      resume: true,
      ...(filter ? { filter } : {}),
    },
    floorMs,
  );
}

export function createOnlineRules(opts: OnlineRulesOptions): OnlineRules {
  const running = new Map<string, Running>();
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<void> = Promise.resolve();
  let stopped = true;

  /** Brings `running` in line with the enabled records. */
  const reconcile = (): void => {
    const records = opts.store
      .list('onlineEvaluation', { offset: 0, limit: MAX_RULES })
      .filter((r) => r.executionStatus === 'ENABLED');
    const ids = new Set(records.map((r) => r.id));
    for (const id of running.keys()) if (!ids.has(id)) running.delete(id);
    for (const record of records) {
      if (running.get(record.id)?.version === record.updatedAt) continue;
      try {
        running.set(record.id, { version: record.updatedAt, evaluator: evaluatorOf(record, opts) });
      } catch (error) {
        opts.logger.warn('online evaluation rule not started', { rule: record.id, error: String(error) });
      }
    }
  };

  const runPass = async (): Promise<void> => {
    reconcile();
    for (const [id, { evaluator }] of running) {
      if (stopped) return;
      try {
        const outcomes = await evaluator.tick();
        if (outcomes.length) opts.logger.info('online evaluation', { rule: id, sessions: outcomes.length });
      } catch (error) {
        opts.logger.warn('online evaluation pass failed', { rule: id, error: (error as Error).message });
      }
    }
  };

  const schedule = (): void => {
    timer = setTimeout(() => {
      pass = runPass().finally(() => {
        if (!stopped) schedule();
      });
    }, opts.intervalMs);
  };

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      running.clear(); // a leader again: resume from the collector, not from what this process held
      schedule();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await pass;
    },
  };
}

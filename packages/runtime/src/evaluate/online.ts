/**
 * Online evaluation: a rule samples a share of new sessions (optionally only those a query-language
 * filter matches) and evaluates each once it has completed — no span of it for `idleMs`. Sampling is
 * by a hash of the session id, so the same session is in or out on every tick and every restart.
 * Each tick reads the collector's session list, judges what is due with `runBatch` (results stored
 * as evaluation spans, run id `online-<rule>`) and remembers what it has done; a restarted rule
 * reads what it did back from those stored results.
 */
import { createHash } from 'node:crypto';
import type { QueryResponse, SessionListResponse } from '@agentrt/collector';
import { type ItemOutcome, runBatch } from './batch.js';
import { type CollectorLocation } from './collector-spans.js';
import { sessionItems } from './dataset.js';
import { type EvaluationService } from './evaluation-service.js';
import { EVALUATION_SERVICE_NAME } from './results-otlp.js';

export interface OnlineRule {
  /** Names the run (`online-<name>`) the results are stored under. */
  name: string;
  /** Share of sessions evaluated, 0–100. */
  samplingPercent: number;
  evaluatorIds: string[];
  /** A query-language filter sessions must match (`attributes.gen_ai.agent.name = "weather"`). */
  filter?: string;
  /** Only sessions with spans of one of these services (`service.name`); absent: any. */
  serviceNames?: string[];
  /** A session is complete after this long without a new span. */
  idleMs: number;
  concurrency?: number;
  /** Sessions evaluated in one pass at most, oldest first (a backlog is worked off pass by pass). */
  maxPerTick?: number;
  /**
   * Resume where an earlier process of the rule stopped: the first pass starts from its last stored
   * result (less the idle time and a minute), not from `startedMs`, and never before `startedMs`'
   * floor. Without it, sessions last active before `startedMs` are not new.
   */
  resume?: boolean;
}

/** How far before its last stored result a resumed rule looks (clock skew, a pass in progress). */
const RESUME_SLACK_MS = 60_000;

export interface OnlineEvaluator {
  /** One pass: evaluates the sessions that are due; resolves to their outcomes. */
  tick(nowMs?: number): Promise<ItemOutcome[]>;
}

/** Is the session in the sample? The same answer for the same id and rate, everywhere. */
export function sampled(sessionId: string, percent: number): boolean {
  const bucket = createHash('sha256').update(sessionId).digest().readUInt32BE(0) % 10_000;
  return bucket < Math.round(percent * 100);
}

async function getJson<T>(at: CollectorLocation, path: string, init: RequestInit = {}): Promise<T> {
  const headers = {
    ...(at.token ? { authorization: `Bearer ${at.token}` } : {}),
    'content-type': 'application/json',
  };
  const res = await fetch(`${at.url.replace(/\/+$/, '')}${path}`, {
    ...init,
    headers,
    signal: AbortSignal.timeout(30_000),
  });
  if (!res.ok) throw new Error(`the collector answered HTTP ${res.status} for ${path}`);
  return (await res.json()) as T;
}

/** The ids among `ids` that have a span the filter matches. */
async function matching(at: CollectorLocation, filter: string, ids: readonly string[]): Promise<Set<string>> {
  const list = ids.map((id) => JSON.stringify(id)).join(', ');
  const query = `filter (${filter}) and attributes.session.id in [${list}] | stats count(*) by attributes.session.id as session`;
  const out = await getJson<QueryResponse>(at, '/api/query', {
    method: 'POST',
    body: JSON.stringify({ query }),
  });
  return new Set(out.rows.map((r) => String(r.session)));
}

/** When the run's last result was stored (ms), undefined before its first. */
async function lastResultMs(at: CollectorLocation, runFilter: string): Promise<number | undefined> {
  const query = `filter ${runFilter} | stats max(@timestamp) as last`;
  const out = await getJson<QueryResponse>(at, '/api/query', {
    method: 'POST',
    body: JSON.stringify({ query }),
  });
  const last = Number(out.rows[0]?.last);
  return Number.isFinite(last) && last > 0 ? last : undefined;
}

/** The sessions of the list that are complete, new, not the evaluator's own and of the rule's services. */
function dueSessions(
  sessions: SessionListResponse['sessions'],
  rule: OnlineRule,
  fromMs: number,
  nowMs: number,
): SessionListResponse['sessions'] {
  const services = rule.serviceNames && new Set(rule.serviceNames);
  return sessions
    .filter((s) => {
      const lastMs = s.lastSeenUnixNano / 1e6;
      const ownTraffic = s.serviceNames.every((n) => n === EVALUATION_SERVICE_NAME);
      const ofService = !services || s.serviceNames.some((n) => services.has(n));
      return ofService && !ownTraffic && lastMs >= fromMs && nowMs - lastMs >= rule.idleMs;
    })
    .sort((a, b) => a.lastSeenUnixNano - b.lastSeenUnixNano);
}

/**
 * `startedMs`: sessions last active before it are not new and never evaluated (default: now); with
 * `rule.resume`, the floor under where the rule resumes. A rule that ran before (results under
 * `online-<name>` in the collector) does not evaluate again the sessions an earlier process of it
 * evaluated.
 */
export function createOnlineEvaluator(
  service: EvaluationService,
  collector: CollectorLocation,
  rule: OnlineRule,
  startedMs = Date.now(),
): OnlineEvaluator {
  const done = new Set<string>();
  for (const id of rule.evaluatorIds) service.evaluator(id); // an unknown id fails now, not per tick
  // The rule's results in the collector: what earlier processes of it did.
  const runFilter = `attributes.agentrt.evaluation.run_id = ${JSON.stringify(`online-${rule.name}`)}`;
  let fromMs: number | undefined = rule.resume ? undefined : startedMs;
  /** Drops from `ids` (into `done`) those `keep` does not hold; returns the rest. */
  const keepOnly = (ids: string[], keep: (id: string) => boolean) => {
    for (const id of ids) if (!keep(id)) done.add(id);
    return ids.filter((id) => !done.has(id));
  };
  return {
    async tick(nowMs = Date.now()) {
      if (fromMs === undefined) {
        const last = await lastResultMs(collector, runFilter);
        fromMs = Math.max(startedMs, last === undefined ? 0 : last - rule.idleMs - RESUME_SLACK_MS);
      }
      const { sessions } = await getJson<SessionListResponse>(collector, '/api/sessions?limit=1000');
      const due = dueSessions(sessions, rule, fromMs, nowMs).map((s) => s.sessionId);
      let ids = keepOnly(due, (id) => !done.has(id) && sampled(id, rule.samplingPercent));
      if (ids.length) {
        const before = await matching(collector, runFilter, ids); // evaluated by an earlier process
        ids = keepOnly(ids, (id) => !before.has(id));
      }
      if (rule.filter && ids.length) {
        const hit = await matching(collector, rule.filter, ids);
        ids = keepOnly(ids, (id) => hit.has(id));
      }
      ids = ids.slice(0, rule.maxPerTick ?? 100); // the rest: the next pass
      for (const id of ids) done.add(id);
      if (ids.length === 0) return [];
      return runBatch({
        service,
        items: sessionItems(ids),
        evaluatorIds: rule.evaluatorIds,
        concurrency: rule.concurrency ?? 4,
        runId: `online-${rule.name}`,
      });
    },
  };
}

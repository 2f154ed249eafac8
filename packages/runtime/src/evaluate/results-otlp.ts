/**
 * Evaluation results stored beside the traces: one span per result, posted to the collector as
 * OTLP/JSON, carrying the OpenTelemetry GenAI evaluation attributes (`gen_ai.evaluation.name`,
 * `gen_ai.evaluation.score.value`, `…score.label`, `…explanation`) and a `gen_ai.evaluation.result`
 * event with the same, so the query language, the CLI and the UI read them like any span:
 * `filter ispresent(attributes.gen_ai.evaluation.name) | stats avg(attributes.gen_ai.evaluation.score.value) by attributes.gen_ai.evaluation.name`.
 * The judge's tokens and cost go in `agentrt.evaluation.*` attributes, apart from the agent's own
 * `gen_ai.usage.*`, so judging never inflates the session's model cost.
 */
import { randomBytes } from 'node:crypto';
import { costOf } from '@agentrt/collector/prices';
import { type EvaluationResult } from './evaluate.js';
import { type JudgeModel } from './judge/judge-model.js';
import { EVALUATION_NAME_KEY } from './session-spans.js';

export const EVALUATION_SERVICE_NAME = 'agentrt-evaluation';

/** What one evaluation belongs to: a run (a CI run, a batch, one Evaluate call) and its item. */
export interface EvaluationRecord {
  runId: string;
  /** The dataset item (a line number, a session id), for a run view; the session id by default. */
  itemId?: string;
  judge: Pick<JudgeModel, 'provider' | 'modelId'>;
  /** The end of the evaluation, ms since the epoch (the spans' time). */
  endMs: number;
  durationMs: number;
}

/** Numbers that stay doubles when whole (a score of 1, a cost of 0), so the store types them alike. */
const DOUBLE_KEYS = new Set(['gen_ai.evaluation.score.value', 'agentrt.evaluation.cost_usd']);

type OtlpValue = { stringValue: string } | { doubleValue: number } | { intValue: string };
type KeyValue = { key: string; value: OtlpValue };

function keyValues(attrs: Record<string, string | number | undefined>): KeyValue[] {
  const out: KeyValue[] = [];
  for (const [key, v] of Object.entries(attrs)) {
    if (v === undefined) continue;
    const value: OtlpValue =
      typeof v === 'string'
        ? { stringValue: v }
        : Number.isInteger(v) && !DOUBLE_KEYS.has(key)
          ? { intValue: String(v) }
          : { doubleValue: v };
    out.push({ key, value });
  }
  return out;
}

/** The GenAI evaluation attributes of a result (the span's and its event's). */
function evaluationAttributes(r: EvaluationResult): Record<string, string | number | undefined> {
  return {
    [EVALUATION_NAME_KEY]: r.evaluatorId,
    'gen_ai.evaluation.score.value': r.value,
    'gen_ai.evaluation.score.label': r.label,
    'gen_ai.evaluation.explanation': r.explanation,
  };
}

function judgeCost(r: EvaluationResult, record: EvaluationRecord): number | undefined {
  const usage = r.tokenUsage;
  if (!usage || usage.totalTokens === 0) return undefined;
  if (record.judge.provider === 'offline') return 0;
  return costOf(record.judge.modelId, usage.inputTokens, usage.outputTokens);
}

function resultSpan(r: EvaluationResult, record: EvaluationRecord, traceId: string) {
  const ctx = r.context.spanContext;
  const endNs = BigInt(Math.round(record.endMs * 1e6));
  const startNs = endNs - BigInt(Math.round(record.durationMs * 1e6));
  const attributes = {
    ...evaluationAttributes(r),
    'session.id': ctx.sessionId,
    'agentrt.evaluation.run_id': record.runId,
    'agentrt.evaluation.item_id': record.itemId ?? ctx.sessionId,
    'agentrt.evaluation.trace_id': ctx.traceId,
    'agentrt.evaluation.span_id': ctx.spanId,
    'agentrt.evaluation.error_code': r.errorCode,
    'agentrt.evaluation.error_message': r.errorMessage,
    'agentrt.evaluation.judge.provider': r.tokenUsage?.totalTokens ? record.judge.provider : undefined,
    'agentrt.evaluation.judge.model': r.tokenUsage?.totalTokens ? record.judge.modelId : undefined,
    'agentrt.evaluation.usage.input_tokens': r.tokenUsage?.inputTokens,
    'agentrt.evaluation.usage.output_tokens': r.tokenUsage?.outputTokens,
    'agentrt.evaluation.cost_usd': judgeCost(r, record),
  };
  return {
    traceId,
    spanId: randomBytes(8).toString('hex'),
    name: `evaluation ${r.evaluatorId}`,
    kind: 1,
    startTimeUnixNano: String(startNs),
    endTimeUnixNano: String(endNs),
    attributes: keyValues(attributes),
    events: [
      {
        name: 'gen_ai.evaluation.result',
        timeUnixNano: String(endNs),
        attributes: keyValues(evaluationAttributes(r)),
      },
    ],
    links: ctx.traceId && ctx.spanId ? [{ traceId: ctx.traceId, spanId: ctx.spanId, attributes: [] }] : [],
    status: { code: r.errorCode ? 2 : 1, ...(r.errorMessage ? { message: r.errorMessage } : {}) },
  };
}

/** An ExportTraceServiceRequest (OTLP/JSON) of one evaluation: one trace, one span per result. */
export function resultsToOtlp(results: readonly EvaluationResult[], record: EvaluationRecord): unknown {
  const traceId = randomBytes(16).toString('hex');
  return {
    resourceSpans: [
      {
        resource: { attributes: keyValues({ 'service.name': EVALUATION_SERVICE_NAME }) },
        scopeSpans: [
          {
            scope: { name: '@agentrt/runtime/evaluate' },
            spans: results.map((r) => resultSpan(r, record, traceId)),
          },
        ],
      },
    ],
  };
}

/** Posts results to a collector's OTLP/HTTP endpoint (`headers`: its ingest token). */
export async function postResults(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<void> {
  const res = await fetch(`${url.replace(/\/+$/, '')}/v1/traces`, {
    method: 'POST',
    signal: AbortSignal.timeout(30_000),
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await res.body?.cancel();
  if (!res.ok) throw new Error(`the collector at ${url} refused evaluation results: HTTP ${res.status}`);
}

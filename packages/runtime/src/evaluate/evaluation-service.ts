/**
 * `Evaluate` end to end: the request's spans (inline, or the session's from the local collector),
 * read as a session, scored by the evaluator the id names.
 */
import { validationError } from '../errors.js';
import { type EvaluatorSpec, builtinEvaluator } from './catalog.js';
import { type CollectorLocation, sessionDocuments, traceDocuments } from './collector-spans.js';
import { type EvaluationDeps, type EvaluationResult, runEvaluator } from './evaluate.js';
import { type EvaluateRequest } from './evaluate-request.js';
import { createJudgeModel } from './judge/index.js';
import { type JudgeSettings } from './judge/judge-model.js';
import { createPromptSource } from './judge/prompts.js';
import { readEvaluatorsFile } from './custom/custom-evaluators.js';
import { type EvaluationRecord, postResults, resultsToOtlp } from './results-otlp.js';
import { type SessionView, parseSessionSpans, readSession } from './session-spans.js';

export interface EvaluationSettings {
  judge: JudgeSettings;
  /** Where session spans are read by session id (the local collector). */
  collector?: CollectorLocation;
  /** AGENTRT_EVAL_PROMPTS_DIR: prompt files replacing the packaged ones, file by file. */
  promptsDir?: string;
  /** AGENTRT_EVALUATORS_FILE: custom evaluators registered by name. */
  evaluatorsFile?: string;
  /** Custom evaluators besides the file's (the CLI's `--evaluator <file>`). */
  customEvaluators?: EvaluatorSpec[];
}

export interface EvaluationService {
  readonly deps: EvaluationDeps;
  /** The evaluator an id names; an unknown id is a ValidationException naming `evaluatorId`. */
  evaluator(id: string): EvaluatorSpec;
  /** The spans of the request as a session. */
  session(request: EvaluateRequest): Promise<SessionView>;
  evaluate(request: EvaluateRequest): Promise<EvaluationResult[]>;
  /** Stores results in the collector as evaluation spans (nothing without a collector). */
  record(results: readonly EvaluationResult[], run: Omit<EvaluationRecord, 'judge'>): Promise<void>;
}

const SPANS_FIELD = 'evaluationInput.sessionSpans';

export function createEvaluationService(settings: EvaluationSettings): EvaluationService {
  const custom = new Map<string, EvaluatorSpec>();
  const all = [
    ...(settings.evaluatorsFile ? readEvaluatorsFile(settings.evaluatorsFile) : []),
    ...(settings.customEvaluators ?? []),
  ];
  for (const spec of all) custom.set(spec.id, spec);
  const deps: EvaluationDeps = {
    judge: createJudgeModel(settings.judge),
    prompts: createPromptSource(settings.promptsDir),
    judgeTimeoutMs: settings.judge.timeoutMs,
  };

  /** Spans from the collector: the session a reference input names, else the target's traces. */
  async function storedDocuments(request: EvaluateRequest): Promise<unknown[]> {
    const sessionId = request.references[0]?.context.sessionId;
    const collector = settings.collector;
    if (!sessionId && !request.target?.traceIds)
      throw validationError(
        SPANS_FIELD,
        'is empty: give spans, or a session id in evaluationReferenceInputs[0].context',
      );
    if (!collector)
      throw validationError(
        SPANS_FIELD,
        'is empty and no collector is configured to read the session from (AGENTRT_COLLECTOR_URL)',
      );
    return sessionId
      ? sessionDocuments(collector, sessionId)
      : traceDocuments(collector, request.target!.traceIds!);
  }

  const service: EvaluationService = {
    deps,
    evaluator(id) {
      const spec = builtinEvaluator(id) ?? custom.get(id);
      if (!spec) throw validationError('evaluatorId', `no evaluator ${JSON.stringify(id)}`);
      return spec;
    },
    async session(request) {
      if (request.sessionSpans.length > 0)
        return readSession(parseSessionSpans(request.sessionSpans), request.references[0]?.context.sessionId);
      const docs = await storedDocuments(request);
      return readSession(parseSessionSpans(docs, Infinity), request.references[0]?.context.sessionId);
    },
    async evaluate(request) {
      const spec = service.evaluator(request.evaluatorId);
      return runEvaluator(spec, await service.session(request), request, deps);
    },
    async record(results, run) {
      const collector = settings.collector;
      if (!collector || results.length === 0) return;
      await postResults(
        collector.url,
        resultsToOtlp(results, { ...run, judge: deps.judge }),
        collector.ingestHeaders,
      );
    },
  };
  return service;
}

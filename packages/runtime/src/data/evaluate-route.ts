import { type RuntimeConfig } from '../config.js';
import { type CollectorLocation } from '../evaluate/collector-spans.js';
import { type EvaluationService, createEvaluationService } from '../evaluate/evaluation-service.js';
import { parseEvaluateRequest } from '../evaluate/evaluate-request.js';
import { sendJson } from '@agentrt/kit';
import { readJsonObject } from '../http/http-util.js';
import { type Router } from '../http/router.js';
import { type Logger } from '../logger.js';
import { type Authenticator } from './auth.js';

/**
 * The data plane's `Evaluate` (`POST /evaluations/evaluate/{evaluatorId}`), as the AWS SDK's
 * EvaluateCommand calls it. Returns the service it built and the collector it reads (online evaluation uses both).
 */
export function registerEvaluate(
  router: Router,
  deps: { config: Readonly<RuntimeConfig>; auth: Authenticator; logger: Logger },
): { service: EvaluationService; collector?: CollectorLocation } {
  const { evaluation, otlpHeaders } = deps.config;
  const collector = evaluation.collector && { ingestHeaders: otlpHeaders, ...evaluation.collector };
  const service = createEvaluationService({ ...evaluation, ...(collector ? { collector } : {}) });
  router.add('POST', '/evaluations/evaluate/:evaluatorId', async ({ req, res, params, requestId }) => {
    await deps.auth.authenticate(req);
    const startedMs = Date.now();
    const body = await readJsonObject(req, deps.config.maxBodyBytes);
    const request = parseEvaluateRequest(params.evaluatorId ?? '', body);
    const results = await service.evaluate(request);
    sendJson(res, 200, { evaluationResults: results });
    // Stored after answering: a collector that is down costs the caller nothing but a log line.
    const run = { runId: requestId, endMs: Date.now(), durationMs: Date.now() - startedMs };
    service
      .record(results, run)
      .catch((error: unknown) =>
        deps.logger.warn('evaluation results not stored', { requestId, error: (error as Error).message }),
      );
  });
  return { service, ...(collector ? { collector } : {}) };
}

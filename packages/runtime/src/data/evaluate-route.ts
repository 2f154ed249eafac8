import { type RuntimeConfig } from '../config.js';
import { type EvaluationService, createEvaluationService } from '../evaluate/evaluation-service.js';
import { parseEvaluateRequest } from '../evaluate/evaluate-request.js';
import { readJsonObject, sendJson } from '../http/http-util.js';
import { type Router } from '../http/router.js';
import { type Authenticator } from './auth.js';

/**
 * The data plane's `Evaluate` (`POST /evaluations/evaluate/{evaluatorId}`), as the AWS SDK's
 * EvaluateCommand calls it. Returns the service it built (the CLI and tests use the same one).
 */
export function registerEvaluate(
  router: Router,
  deps: { config: Readonly<RuntimeConfig>; auth: Authenticator },
): EvaluationService {
  const service = createEvaluationService(deps.config.evaluation);
  router.add('POST', '/evaluations/evaluate/:evaluatorId', async ({ req, res, params }) => {
    await deps.auth.authenticate(req);
    const body = await readJsonObject(req, deps.config.maxBodyBytes);
    const request = parseEvaluateRequest(params.evaluatorId ?? '', body);
    sendJson(res, 200, { evaluationResults: await service.evaluate(request) });
  });
  return service;
}

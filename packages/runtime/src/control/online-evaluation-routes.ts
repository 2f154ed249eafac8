/**
 * The control plane's online evaluation configs, as BedrockAgentCoreControlClient calls them
 * (Create/Get/List/Update/DeleteOnlineEvaluationConfig): rules stored in the control store, run by the
 * runtime (evaluate/online-rules.ts) against the sessions in its collector.
 */
import { type RuntimeConfig } from '../config.js';
import { type Authenticator } from '../data/auth.js';
import { RuntimeApiError, notFound, validationError } from '../errors.js';
import { type EvaluationService } from '../evaluate/evaluation-service.js';
import { sendJson } from '@agentrt/kit';
import { type RouteContext, type Router } from '../http/router.js';
import { type Logger } from '../logger.js';
import { newRuntimeId } from './arn.js';
import { authedRoute } from './authed-route.js';
import { parseOnlineEvaluationConfig, parseOnlineEvaluationUpdate } from './online-evaluation.js';
import { type OnlineEvaluationRecord, type Store } from './store.js';
import { nextToken, parsePaging, readWriteRequest, validateTags } from './validate.js';

export interface OnlineEvaluationDeps {
  config: Readonly<RuntimeConfig>;
  store: Store;
  auth: Authenticator;
  logger: Logger;
  service: EvaluationService;
}

const MAX_CONFIGS = 1000;
const ID_RE = /^[a-zA-Z][a-zA-Z0-9_]{0,47}-[a-zA-Z0-9]{10}$/;
/** The model's timestamps here are epoch seconds (restJson's default), not date-time strings. */
const epochSeconds = (iso: string): number => Date.parse(iso) / 1000;

function summary(r: OnlineEvaluationRecord) {
  return {
    onlineEvaluationConfigArn: r.arn,
    onlineEvaluationConfigId: r.id,
    onlineEvaluationConfigName: r.name,
    ...(r.description !== undefined ? { description: r.description } : {}),
    status: 'ACTIVE',
    executionStatus: r.executionStatus,
    createdAt: epochSeconds(r.createdAt),
    updatedAt: epochSeconds(r.updatedAt),
  };
}

function detail(r: OnlineEvaluationRecord) {
  return {
    ...summary(r),
    rule: {
      samplingConfig: { samplingPercentage: r.samplingPercentage },
      filters: r.filters,
      sessionConfig: { sessionTimeoutMinutes: r.sessionTimeoutMinutes },
    },
    dataSourceConfig: { cloudWatchLogs: { logGroupNames: [], serviceNames: r.serviceNames } },
    evaluators: r.evaluatorIds.map((evaluatorId) => ({ evaluatorId })),
  };
}

/** Create's and Update's answer: the config, its state, and when it was made or changed. */
function changed(r: OnlineEvaluationRecord, at: 'createdAt' | 'updatedAt') {
  const view = summary(r);
  return {
    onlineEvaluationConfigArn: view.onlineEvaluationConfigArn,
    onlineEvaluationConfigId: view.onlineEvaluationConfigId,
    [at]: view[at],
    status: view.status,
    executionStatus: view.executionStatus,
  };
}

function recordOr404(store: Store, ctx: RouteContext): OnlineEvaluationRecord {
  const id = ctx.params.onlineEvaluationConfigId ?? '';
  if (!ID_RE.test(id)) throw validationError('onlineEvaluationConfigId', `does not match ${ID_RE.source}`);
  const record = store.get('onlineEvaluation', id);
  if (!record) throw notFound(`Online evaluation config ${id} not found`);
  return record;
}

/** Refuses a second config of the same name, and configs beyond the limit. */
function checkRoom(store: Store, name: string): void {
  const all = store.list('onlineEvaluation', { offset: 0, limit: MAX_CONFIGS });
  const same = all.find((r) => r.name === name);
  if (same)
    throw new RuntimeApiError(
      'ConflictException',
      `An online evaluation config named ${name} exists (${same.id})`,
    );
  if (all.length >= MAX_CONFIGS)
    throw new RuntimeApiError(
      'ServiceQuotaExceededException',
      `Online evaluation config limit (${MAX_CONFIGS}) reached`,
    );
}

export function registerOnlineEvaluation(router: Router, deps: OnlineEvaluationDeps): void {
  const { store, config, logger } = deps;
  const authed = authedRoute(deps);

  router.add(
    'POST',
    '/online-evaluation-configs/create',
    authed(async (ctx, region) => {
      const body = await readWriteRequest(ctx.req);
      if (!config.evaluation.collector)
        throw validationError(
          'dataSourceConfig',
          'this runtime reads no collector to find sessions in (set AGENTRT_COLLECTOR_URL)',
        );
      const tags = validateTags(body.tags);
      const record = parseOnlineEvaluationConfig(
        body,
        (name) => {
          const id = newRuntimeId(name);
          return {
            id,
            arn: `arn:aws:bedrock-agentcore:${region}:${config.accountId}:online-evaluation-config/${id}`,
          };
        },
        (id) => deps.service.evaluator(id),
      );
      checkRoom(store, record.name);
      await store.put('onlineEvaluation', record.id, record, '', Date.parse(record.createdAt));
      if (tags) await store.put('tags', record.arn, tags, record.id);
      logger.info('online evaluation config created', { id: record.id, evaluators: record.evaluatorIds });
      sendJson(ctx.res, 202, changed(record, 'createdAt'));
    }),
  );

  router.add(
    'POST',
    '/online-evaluation-configs',
    authed((ctx) => {
      const { offset, limit } = parsePaging(ctx.query);
      sendJson(ctx.res, 200, {
        onlineEvaluationConfigs: store.list('onlineEvaluation', { offset, limit }).map(summary),
        nextToken: nextToken(offset, limit, store.count('onlineEvaluation')),
      });
    }),
  );

  router.add(
    'GET',
    '/online-evaluation-configs/:onlineEvaluationConfigId',
    authed((ctx) => sendJson(ctx.res, 200, detail(recordOr404(store, ctx)))),
  );

  router.add(
    'PUT',
    '/online-evaluation-configs/:onlineEvaluationConfigId',
    authed(async (ctx) => {
      const record = recordOr404(store, ctx);
      const body = await readWriteRequest(ctx.req);
      const next = parseOnlineEvaluationUpdate(body, record, (id) => deps.service.evaluator(id));
      await store.put('onlineEvaluation', next.id, next, '', Date.parse(next.createdAt));
      logger.info('online evaluation config updated', { id: next.id, executionStatus: next.executionStatus });
      sendJson(ctx.res, 202, changed(next, 'updatedAt'));
    }),
  );

  router.add(
    'DELETE',
    '/online-evaluation-configs/:onlineEvaluationConfigId',
    authed(async (ctx) => {
      const record = recordOr404(store, ctx);
      await store.delete('onlineEvaluation', record.id);
      await store.deleteChildren(record.id);
      logger.info('online evaluation config deleted', { id: record.id });
      sendJson(ctx.res, 202, {
        onlineEvaluationConfigArn: record.arn,
        onlineEvaluationConfigId: record.id,
        status: 'DELETING',
      });
    }),
  );
}

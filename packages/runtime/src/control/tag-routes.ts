// TagResource, UntagResource and ListTagsForResource of BedrockAgentCoreControlClient, keyed by the
// runtime or endpoint ARN.
import { notFound, validationError } from '../errors.js';
import { sendJson } from '@agentrt/kit';
import { readJsonObject } from '../http/http-util.js';
import { type RouteContext, type Router } from '../http/router.js';
import { parseRuntimeArn, runtimeArn } from './arn.js';
import { type ControlRouteDeps } from './authed-route.js';
import { getEndpointOr404 } from './records.js';
import { validateTags } from './validate.js';

export function registerTagRoutes(router: Router, { store, authed }: ControlRouteDeps): void {
  const taggable = (ctx: RouteContext): { arn: string; runtimeId: string } => {
    const arn = ctx.params.resourceArn as string;
    const parsed = parseRuntimeArn(arn);
    if (!parsed || arn.length < 20 || arn.length > 1011)
      throw validationError('resourceArn', `${arn} is not an agent runtime or runtime endpoint ARN`);
    const runtime = store.get('runtime', parsed.runtimeId);
    if (!runtime || runtime.arn !== runtimeArn(parsed.region, parsed.accountId, parsed.runtimeId))
      throw notFound(`Resource ${arn} not found`);
    if (parsed.endpointName) getEndpointOr404(store, runtime, parsed.endpointName);
    return { arn, runtimeId: runtime.id };
  };

  router.add(
    'POST',
    '/tags/:resourceArn',
    authed(async (ctx) => {
      const { arn, runtimeId } = taggable(ctx);
      const body = await readJsonObject(ctx.req, 1_000_000);
      if (body.tags === undefined) throw validationError('tags', 'is required');
      const merged = { ...(store.get('tags', arn) ?? {}), ...validateTags(body.tags) };
      validateTags(merged);
      await store.put('tags', arn, merged, runtimeId);
      ctx.res.writeHead(204).end();
    }),
  );

  router.add(
    'DELETE',
    '/tags/:resourceArn',
    authed(async (ctx) => {
      const { arn, runtimeId } = taggable(ctx);
      const keys = ctx.query.getAll('tagKeys');
      if (keys.length === 0) throw validationError('tagKeys', 'is required');
      const tags = { ...(store.get('tags', arn) ?? {}) };
      for (const key of keys) delete tags[key];
      await store.put('tags', arn, tags, runtimeId);
      ctx.res.writeHead(204).end();
    }),
  );

  router.add(
    'GET',
    '/tags/:resourceArn',
    authed((ctx) => {
      const { arn } = taggable(ctx);
      sendJson(ctx.res, 200, { tags: store.get('tags', arn) ?? {} });
    }),
  );
}

// The runtime endpoint operations of BedrockAgentCoreControlClient (qualifiers):
// Create/List/Get/Update/DeleteAgentRuntimeEndpoint. DEFAULT always exists and follows the latest
// version.
import { RuntimeApiError } from '../errors.js';
import { sendJson } from '@agentrt/kit';
import { type Router } from '../http/router.js';
import { endpointArn } from './arn.js';
import { type ControlRouteDeps, now } from './authed-route.js';
import { DEFAULT_ENDPOINT, getEndpointOr404, getRuntimeOr404, getVersionOr404 } from './records.js';
import { type EndpointRecord, type RuntimeRecord } from './store.js';
import {
  NAME_RE,
  nextToken,
  optionalString,
  parsePaging,
  requireString,
  readWriteRequest,
  validateTags,
} from './validate.js';

const MAX_ENDPOINTS = 10;

function endpointView(e: EndpointRecord, runtime: RuntimeRecord) {
  return {
    name: e.name,
    id: e.id,
    agentRuntimeEndpointArn: e.arn,
    agentRuntimeArn: runtime.arn,
    ...(e.liveVersion !== undefined ? { liveVersion: String(e.liveVersion) } : {}),
    targetVersion: String(e.targetVersion),
    ...(e.description !== undefined ? { description: e.description } : {}),
    status: e.status,
    ...(e.failureReason ? { failureReason: e.failureReason } : {}),
    createdAt: e.createdAt,
    lastUpdatedAt: e.lastUpdatedAt,
  };
}

export function registerEndpointRoutes(router: Router, { store, authed }: ControlRouteDeps): void {
  router.add(
    'PUT',
    '/runtimes/:runtimeId/runtime-endpoints/',
    authed(async (ctx) => {
      const runtime = getRuntimeOr404(store, ctx.params.runtimeId as string);
      const body = await readWriteRequest(ctx.req);
      const name = requireString(body, 'name', 1, 48, NAME_RE);
      if (name === DEFAULT_ENDPOINT)
        throw new RuntimeApiError('ConflictException', 'DEFAULT is the implicit endpoint and always exists');
      const description = optionalString(body, 'description', 1, 256);
      const tags = validateTags(body.tags);
      const requested = optionalString(body, 'agentRuntimeVersion', 1, 5, /^[1-9][0-9]{0,4}$/);
      const version = requested ? Number(requested) : runtime.latestVersion;
      getVersionOr404(store, runtime.id, version);
      if (store.get('endpoint', `${runtime.id}#${name}`))
        throw new RuntimeApiError('ConflictException', `Endpoint ${name} already exists`);
      if (store.count('endpoint', runtime.id) >= MAX_ENDPOINTS)
        throw new RuntimeApiError(
          'ServiceQuotaExceededException',
          `Endpoint limit (${MAX_ENDPOINTS}) reached for ${runtime.id}`,
        );
      const at = now();
      const endpoint: EndpointRecord = {
        runtimeId: runtime.id,
        name,
        id: `${name}-${runtime.id.slice(-10)}`,
        arn: endpointArn(runtime.arn, name),
        liveVersion: version,
        targetVersion: version,
        ...(description !== undefined ? { description } : {}),
        status: 'READY',
        createdAt: at,
        lastUpdatedAt: at,
      };
      await store.put('endpoint', `${runtime.id}#${name}`, endpoint, runtime.id, Date.parse(at));
      if (tags) await store.put('tags', endpoint.arn, tags, runtime.id);
      sendJson(ctx.res, 202, {
        targetVersion: String(version),
        agentRuntimeEndpointArn: endpoint.arn,
        agentRuntimeArn: runtime.arn,
        agentRuntimeId: runtime.id,
        endpointName: name,
        status: 'CREATING',
        createdAt: at,
      });
    }),
  );

  router.add(
    'POST',
    '/runtimes/:runtimeId/runtime-endpoints/',
    authed((ctx) => {
      const runtime = getRuntimeOr404(store, ctx.params.runtimeId as string);
      const { offset, limit } = parsePaging(ctx.query);
      const all = [
        getEndpointOr404(store, runtime, DEFAULT_ENDPOINT),
        ...store.list('endpoint', { parent: runtime.id, offset: 0, limit: MAX_ENDPOINTS * 10 }),
      ];
      sendJson(ctx.res, 200, {
        runtimeEndpoints: all.slice(offset, offset + limit).map((e) => endpointView(e, runtime)),
        nextToken: nextToken(offset, limit, all.length),
      });
    }),
  );

  router.add(
    'GET',
    '/runtimes/:runtimeId/runtime-endpoints/:endpointName/',
    authed(async (ctx) => {
      const runtime = getRuntimeOr404(store, ctx.params.runtimeId as string);
      sendJson(
        ctx.res,
        200,
        endpointView(getEndpointOr404(store, runtime, ctx.params.endpointName as string), runtime),
      );
    }),
  );

  router.add(
    'PUT',
    '/runtimes/:runtimeId/runtime-endpoints/:endpointName/',
    authed(async (ctx) => {
      const runtime = getRuntimeOr404(store, ctx.params.runtimeId as string);
      const name = ctx.params.endpointName as string;
      if (name === DEFAULT_ENDPOINT)
        throw new RuntimeApiError(
          'ConflictException',
          'DEFAULT always follows the latest version and cannot be updated',
        );
      const endpoint = getEndpointOr404(store, runtime, name);
      const body = await readWriteRequest(ctx.req);
      const requested = optionalString(body, 'agentRuntimeVersion', 1, 5, /^[1-9][0-9]{0,4}$/);
      const description = optionalString(body, 'description', 1, 256);
      const version = requested ? Number(requested) : endpoint.targetVersion;
      getVersionOr404(store, runtime.id, version);
      const at = now();
      const next: EndpointRecord = {
        ...endpoint,
        liveVersion: version,
        targetVersion: version,
        lastUpdatedAt: at,
        ...(description !== undefined ? { description } : {}),
      };
      await store.put('endpoint', `${runtime.id}#${name}`, next, runtime.id, Date.parse(endpoint.createdAt));
      sendJson(ctx.res, 202, { ...endpointView(next, runtime), status: 'UPDATING' });
    }),
  );

  router.add(
    'DELETE',
    '/runtimes/:runtimeId/runtime-endpoints/:endpointName/',
    authed(async (ctx) => {
      const runtime = getRuntimeOr404(store, ctx.params.runtimeId as string);
      const name = ctx.params.endpointName as string;
      if (name === DEFAULT_ENDPOINT)
        throw new RuntimeApiError('ConflictException', 'DEFAULT cannot be deleted');
      const endpoint = getEndpointOr404(store, runtime, name);
      await store.delete('endpoint', `${runtime.id}#${name}`);
      await store.delete('tags', endpoint.arn);
      sendJson(ctx.res, 202, { status: 'DELETING', agentRuntimeId: runtime.id, endpointName: name });
    }),
  );
}

import { type RuntimeConfig } from '../config.js';
import { type Authenticator } from '../data/auth.js';
import { RuntimeApiError, notFound, validationError } from '../errors.js';
import { readJsonObject, sendJson } from '../http/http-util.js';
import { type RouteContext, type Router } from '../http/router.js';
import { type Logger } from '../logger.js';
import { type PinnedArtifact } from '../sessions/artifact.js';
import { createArtifactPins } from './artifacts.js';
import { type SessionManager } from '../sessions/session-manager.js';
import { endpointArn, newRuntimeId, parseRuntimeArn, runtimeArn, workloadIdentityArn } from './arn.js';
import {
  type EndpointRecord,
  type RuntimeRecord,
  type RuntimeStatus,
  type Store,
  StoreConflictError,
  type VersionRecord,
} from './store.js';
import {
  NAME_RE,
  nextToken,
  optionalString,
  parsePaging,
  parseVersionConfig,
  requireString,
  validateClientToken,
  validateTags,
} from './validate.js';

export interface ControlPlaneDeps {
  config: Readonly<RuntimeConfig>;
  store: Store;
  sessions: SessionManager;
  auth: Authenticator;
  logger: Logger;
}

const MAX_ENDPOINTS = 10;
const DEFAULT_ENDPOINT = 'DEFAULT';

const now = () => new Date().toISOString();

export function getRuntimeOr404(store: Store, runtimeId: string): RuntimeRecord {
  const runtime = store.get('runtime', runtimeId);
  if (!runtime) throw notFound(`Agent runtime ${runtimeId} not found`);
  return runtime;
}

export function getVersionOr404(store: Store, runtimeId: string, version: number): VersionRecord {
  const record = store.get('version', `${runtimeId}#${version}`);
  if (!record) throw notFound(`Version ${version} of agent runtime ${runtimeId} not found`);
  return record;
}

/** A named endpoint, or the implicit DEFAULT that follows the latest version. */
export function getEndpointOr404(store: Store, runtime: RuntimeRecord, name: string): EndpointRecord {
  if (name === DEFAULT_ENDPOINT) {
    return {
      runtimeId: runtime.id,
      name: DEFAULT_ENDPOINT,
      id: DEFAULT_ENDPOINT,
      arn: endpointArn(runtime.arn, DEFAULT_ENDPOINT),
      liveVersion: runtime.latestVersion,
      targetVersion: runtime.latestVersion,
      status: runtime.status === 'CREATING' || runtime.status === 'UPDATING' ? runtime.status : 'READY',
      createdAt: runtime.createdAt,
      lastUpdatedAt: runtime.lastUpdatedAt,
    };
  }
  const endpoint = store.get('endpoint', `${runtime.id}#${name}`);
  if (!endpoint) throw notFound(`Endpoint ${name} of agent runtime ${runtime.id} not found`);
  return endpoint;
}

function versionParam(ctx: RouteContext): number | undefined {
  const raw = ctx.query.get('version');
  if (raw === null) return undefined;
  if (!/^[1-9][0-9]{0,4}$/.test(raw)) throw validationError('version', 'must be a version number 1–99999');
  return Number(raw);
}

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

/** Wraps a handler: the caller authenticated first, the handler given the caller's region. */
export function authedRoute(deps: { auth: Authenticator; config: Readonly<RuntimeConfig> }) {
  return (handler: (ctx: RouteContext, region: string) => Promise<void> | void) =>
    async (ctx: RouteContext): Promise<void> => {
      const caller = await deps.auth.authenticate(ctx.req);
      await handler(ctx, caller.region ?? deps.config.region);
    };
}

/** Registers the control-plane operations of `BedrockAgentCoreControlClient` on the router. */
export function registerControlPlane(router: Router, deps: ControlPlaneDeps): void {
  const { config, store, sessions, logger } = deps;
  const pins = createArtifactPins(config, store, logger);

  const authed = authedRoute(deps);

  /** Checks the artifact in the background and moves the version (and runtime) to its next status. */
  const settle = (runtimeId: string, version: number, ok: RuntimeStatus, failed: RuntimeStatus) => {
    const key = `${runtimeId}#${version}`;
    const record = store.get('version', key);
    const uri = record?.config.agentRuntimeArtifact.containerConfiguration?.containerUri ?? '';
    void pins.pin(uri, (artifact, reason) =>
      finish(artifact, reason).catch((error: unknown) =>
        // The store is unreachable (the API server): the next start's prune settles it again.
        logger.error('runtime version not settled', { runtimeId, version, error: (error as Error).message }),
      ),
    );
    async function finish(artifact: PinnedArtifact | undefined, reason: string | undefined) {
      const stored = store.get('version', key);
      const runtime = store.get('runtime', runtimeId);
      if (!stored || !runtime || runtime.status === 'DELETING') return;
      const status = reason ? failed : ok;
      const v: VersionRecord = { ...stored, ...(artifact ? { artifact } : {}) };
      await store.put(
        'version',
        key,
        { ...v, status: reason ? 'CREATE_FAILED' : 'READY', ...(reason ? { failureReason: reason } : {}) },
        runtimeId,
        version,
      );
      if (runtime.latestVersion === version) {
        const next: RuntimeRecord = { ...runtime, status, lastUpdatedAt: now() };
        if (reason) next.failureReason = reason;
        else delete next.failureReason;
        await store.put('runtime', runtimeId, next, '', Date.parse(runtime.createdAt));
        if (!reason) sessions.refreshWarmPool({ runtime: next, version: { ...v, status: 'READY' } });
      }
      logger.info('runtime version settled', { runtimeId, version, status, ...(reason ? { reason } : {}) });
    }
  };

  // A runtime left CREATING or UPDATING by a process that stopped mid-way would stay so for good:
  // check its artifact again now and settle it as a live create/update would.
  void pins.prune();
  for (const runtime of store.list('runtime', { offset: 0, limit: 100_000 })) {
    if (runtime.status !== 'CREATING' && runtime.status !== 'UPDATING') continue;
    const creating = runtime.status === 'CREATING';
    logger.warn('runtime left in transition by an earlier process; settling it', {
      runtimeId: runtime.id,
      status: runtime.status,
    });
    settle(runtime.id, runtime.latestVersion, 'READY', creating ? 'CREATE_FAILED' : 'UPDATE_FAILED');
  }

  const idempotent = (token: string | undefined, op: string, body: Record<string, unknown>) => {
    if (!token) return { replay: undefined, remember: () => Promise.resolve() };
    const key = `${op}:${token}`;
    const { clientToken: _ignored, ...rest } = body;
    const fingerprint = JSON.stringify(rest);
    const seen = store.get('idempotency', key);
    if (seen && seen.fingerprint !== fingerprint)
      throw new RuntimeApiError(
        'ValidationException',
        `clientToken ${token} was already used with different parameters`,
        {
          reason: 'IdempotentParameterMismatchException',
          fieldList: [{ name: 'clientToken', message: 'reused with different parameters' }],
        },
      );
    return {
      replay: seen?.response,
      remember: (response: unknown) => store.put('idempotency', key, { fingerprint, response }),
    };
  };

  router.add(
    'PUT',
    '/runtimes/',
    authed(async (ctx, region) => {
      const body = await readJsonObject(ctx.req, 1_000_000);
      const token = validateClientToken(body.clientToken);
      const once = idempotent(token, 'create', body);
      if (once.replay) return sendJson(ctx.res, 202, once.replay);
      const name = requireString(body, 'agentRuntimeName', 1, 48, NAME_RE);
      const versionConfig = parseVersionConfig(body, config.lifecycleMinSeconds);
      const tags = validateTags(body.tags);
      const existing = store.list('runtime', { offset: 0, limit: 100_000 }).find((r) => r.name === name);
      if (existing)
        throw new RuntimeApiError(
          'ConflictException',
          `An agent runtime named ${name} already exists (${existing.id})`,
        );
      if (store.count('runtime') >= 1000)
        throw new RuntimeApiError('ServiceQuotaExceededException', 'Agent runtime limit (1000) reached');
      const id = newRuntimeId(name);
      const createdAt = now();
      const runtime: RuntimeRecord = {
        id,
        name,
        arn: runtimeArn(region, config.accountId, id),
        latestVersion: 1,
        status: 'CREATING',
        createdAt,
        lastUpdatedAt: createdAt,
        workloadIdentityArn: workloadIdentityArn(region, config.accountId, id),
      };
      // Another replica may create the same name at once: the cluster lets only one through.
      await store.put('runtime', id, runtime, '', Date.parse(createdAt)).catch((error: unknown) => {
        if (!(error instanceof StoreConflictError)) throw error;
        throw new RuntimeApiError('ConflictException', `An agent runtime named ${name} already exists`);
      });
      await store.put(
        'version',
        `${id}#1`,
        { runtimeId: id, version: 1, config: versionConfig, status: 'CREATING', createdAt },
        id,
        1,
      );
      if (tags) await store.put('tags', runtime.arn, tags, id);
      const response = {
        agentRuntimeArn: runtime.arn,
        agentRuntimeId: id,
        agentRuntimeVersion: '1',
        createdAt,
        status: runtime.status,
        workloadIdentityDetails: { workloadIdentityArn: runtime.workloadIdentityArn },
      };
      await once.remember(response);
      logger.info('runtime created', { runtimeId: id, name });
      settle(id, 1, 'READY', 'CREATE_FAILED');
      sendJson(ctx.res, 202, response);
    }),
  );

  router.add(
    'POST',
    '/runtimes/',
    authed((ctx) => {
      const { offset, limit } = parsePaging(ctx.query);
      const rows = store.list('runtime', { offset, limit });
      sendJson(ctx.res, 200, {
        agentRuntimes: rows.map((r) => ({
          agentRuntimeArn: r.arn,
          agentRuntimeId: r.id,
          agentRuntimeVersion: String(r.latestVersion),
          agentRuntimeName: r.name,
          description: store.get('version', `${r.id}#${r.latestVersion}`)?.config.description ?? '',
          lastUpdatedAt: r.lastUpdatedAt,
          status: r.status,
        })),
        nextToken: nextToken(offset, limit, store.count('runtime')),
      });
    }),
  );

  router.add(
    'GET',
    '/runtimes/:runtimeId/',
    authed((ctx) => {
      const runtime = getRuntimeOr404(store, ctx.params.runtimeId as string);
      const requested = versionParam(ctx);
      const v = getVersionOr404(store, runtime.id, requested ?? runtime.latestVersion);
      const status = requested === undefined ? runtime.status : v.status;
      const failureReason = requested === undefined ? runtime.failureReason : v.failureReason;
      sendJson(ctx.res, 200, {
        agentRuntimeArn: runtime.arn,
        agentRuntimeName: runtime.name,
        agentRuntimeId: runtime.id,
        agentRuntimeVersion: String(v.version),
        createdAt: runtime.createdAt,
        lastUpdatedAt: requested === undefined ? runtime.lastUpdatedAt : v.createdAt,
        status,
        ...(failureReason ? { failureReason } : {}),
        workloadIdentityDetails: { workloadIdentityArn: runtime.workloadIdentityArn },
        ...v.config,
      });
    }),
  );

  router.add(
    'PUT',
    '/runtimes/:runtimeId/',
    authed(async (ctx) => {
      const runtime = getRuntimeOr404(store, ctx.params.runtimeId as string);
      const body = await readJsonObject(ctx.req, 1_000_000);
      validateClientToken(body.clientToken);
      for (const field of ['agentRuntimeName', 'tags'])
        if (body[field] !== undefined)
          throw validationError(field, 'cannot be changed by UpdateAgentRuntime');
      const versionConfig = parseVersionConfig(body, config.lifecycleMinSeconds);
      if (runtime.status === 'CREATING' || runtime.status === 'UPDATING' || runtime.status === 'DELETING')
        throw new RuntimeApiError(
          'ConflictException',
          `Agent runtime ${runtime.id} is ${runtime.status}; retry when it is READY`,
        );
      const version = runtime.latestVersion + 1;
      if (version > 99_999)
        throw new RuntimeApiError('ServiceQuotaExceededException', 'Version limit reached');
      const at = now();
      await store.put(
        'version',
        `${runtime.id}#${version}`,
        { runtimeId: runtime.id, version, config: versionConfig, status: 'CREATING', createdAt: at },
        runtime.id,
        version,
      );
      const next: RuntimeRecord = {
        ...runtime,
        latestVersion: version,
        status: 'UPDATING',
        lastUpdatedAt: at,
      };
      delete next.failureReason;
      await store.put('runtime', runtime.id, next, '', Date.parse(runtime.createdAt));
      logger.info('runtime updated', { runtimeId: runtime.id, version });
      settle(runtime.id, version, 'READY', 'UPDATE_FAILED');
      sendJson(ctx.res, 202, {
        agentRuntimeArn: runtime.arn,
        agentRuntimeId: runtime.id,
        agentRuntimeVersion: String(version),
        createdAt: runtime.createdAt,
        lastUpdatedAt: at,
        status: 'UPDATING',
        workloadIdentityDetails: { workloadIdentityArn: runtime.workloadIdentityArn },
      });
    }),
  );

  router.add(
    'DELETE',
    '/runtimes/:runtimeId/',
    authed(async (ctx) => {
      const runtime = getRuntimeOr404(store, ctx.params.runtimeId as string);
      const version = versionParam(ctx);
      if (ctx.query.get('clientToken') !== null) validateClientToken(ctx.query.get('clientToken'));
      if (version !== undefined) {
        getVersionOr404(store, runtime.id, version);
        if (version === runtime.latestVersion)
          throw new RuntimeApiError(
            'ConflictException',
            `Version ${version} is the latest (DEFAULT) version; delete the runtime instead`,
          );
        const pinned = store
          .list('endpoint', { parent: runtime.id, offset: 0, limit: 1000 })
          .find((e) => e.liveVersion === version || e.targetVersion === version);
        if (pinned)
          throw new RuntimeApiError(
            'ConflictException',
            `Version ${version} is used by endpoint ${pinned.name}`,
          );
        await store.delete('version', `${runtime.id}#${version}`);
        void pins.prune();
        return sendJson(ctx.res, 202, {
          status: 'DELETING',
          agentRuntimeId: runtime.id,
          agentRuntimeVersion: String(version),
        });
      }
      await store.put(
        'runtime',
        runtime.id,
        { ...runtime, status: 'DELETING', lastUpdatedAt: now() },
        '',
        Date.parse(runtime.createdAt),
      );
      sendJson(ctx.res, 202, { status: 'DELETING', agentRuntimeId: runtime.id });
      await sessions.stopRuntime(runtime.id);
      await store.deleteChildren(runtime.id);
      await store.delete('tags', runtime.arn);
      await store.delete('runtime', runtime.id);
      void pins.prune();
      logger.info('runtime deleted', { runtimeId: runtime.id });
    }),
  );

  router.add(
    'POST',
    '/runtimes/:runtimeId/versions/',
    authed((ctx) => {
      const runtime = getRuntimeOr404(store, ctx.params.runtimeId as string);
      const { offset, limit } = parsePaging(ctx.query);
      const rows = store.list('version', { parent: runtime.id, offset, limit });
      sendJson(ctx.res, 200, {
        agentRuntimes: rows.map((v) => ({
          agentRuntimeArn: runtime.arn,
          agentRuntimeId: runtime.id,
          agentRuntimeVersion: String(v.version),
          agentRuntimeName: runtime.name,
          description: v.config.description ?? '',
          lastUpdatedAt: v.createdAt,
          status: v.status,
        })),
        nextToken: nextToken(offset, limit, store.count('version', runtime.id)),
      });
    }),
  );

  // Runtime endpoints (qualifiers).
  router.add(
    'PUT',
    '/runtimes/:runtimeId/runtime-endpoints/',
    authed(async (ctx) => {
      const runtime = getRuntimeOr404(store, ctx.params.runtimeId as string);
      const body = await readJsonObject(ctx.req, 1_000_000);
      validateClientToken(body.clientToken);
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
      const body = await readJsonObject(ctx.req, 1_000_000);
      validateClientToken(body.clientToken);
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

  // Tags, keyed by the runtime or endpoint ARN.
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

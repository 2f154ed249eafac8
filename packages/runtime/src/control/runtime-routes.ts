// The runtime operations of BedrockAgentCoreControlClient: Create/List/Get/Update/DeleteAgentRuntime
// and ListAgentRuntimeVersions, one handler each. A new version settles in the background
// (version-settle.ts).
import { RuntimeApiError, validationError } from '../errors.js';
import { sendJson } from '@agentrt/kit';
import { readJsonObject } from '../http/http-util.js';
import { type RouteContext, type Router } from '../http/router.js';
import { newRuntimeId, runtimeArn, workloadIdentityArn } from './arn.js';
import { type createArtifactPins } from './artifacts.js';
import { type ControlRouteDeps, now } from './authed-route.js';
import { idempotentCall } from './idempotency.js';
import { getRuntimeOr404, getVersionOr404 } from './records.js';
import { type RuntimeRecord, type Store, type VersionConfig, StoreConflictError } from './store.js';
import { type createRuntimeDeleter } from './runtime-delete.js';
import { type createVersionSettler } from './version-settle.js';
import {
  NAME_RE,
  nextToken,
  parsePaging,
  parseVersionConfig,
  requireString,
  readWriteRequest,
  validateClientToken,
  validateTags,
} from './validate.js';

export interface RuntimeRouteDeps extends ControlRouteDeps {
  pins: ReturnType<typeof createArtifactPins>;
  settle: ReturnType<typeof createVersionSettler>['settle'];
  finishDelete: ReturnType<typeof createRuntimeDeleter>['finish'];
}

/** The `?version=` of Get and Delete: absent, or a version number. */
function versionParam(ctx: RouteContext): number | undefined {
  const raw = ctx.query.get('version');
  if (raw === null) return undefined;
  if (!/^[1-9][0-9]{0,4}$/.test(raw)) throw validationError('version', 'must be a version number 1–99999');
  return Number(raw);
}

type RuntimeHandler = (deps: RuntimeRouteDeps, ctx: RouteContext, region: string) => Promise<void> | void;

/** Method, path and handler of each operation. */
const RUNTIME_ROUTES: [string, string, RuntimeHandler][] = [
  ['PUT', '/runtimes/', createRuntime],
  ['POST', '/runtimes/', listRuntimes],
  ['GET', '/runtimes/:runtimeId/', getRuntime],
  ['PUT', '/runtimes/:runtimeId/', updateRuntime],
  ['DELETE', '/runtimes/:runtimeId/', deleteRuntime],
  ['POST', '/runtimes/:runtimeId/versions/', listRuntimeVersions],
];

/** Registers the runtime and version operations, each behind authentication. */
export function registerRuntimeRoutes(router: Router, deps: RuntimeRouteDeps): void {
  for (const [method, pattern, handle] of RUNTIME_ROUTES)
    router.add(
      method,
      pattern,
      deps.authed((ctx, region) => handle(deps, ctx, region)),
    );
}

/** CreateAgentRuntime: a clientToken seen before answers as it did then. */
async function createRuntime(deps: RuntimeRouteDeps, ctx: RouteContext, region: string): Promise<void> {
  const { config, store, logger, settle } = deps;
  const body = await readJsonObject(ctx.req, 1_000_000);
  const token = validateClientToken(body.clientToken);
  const once = idempotentCall(store, token, 'create', body);
  if (once.replay) return sendJson(ctx.res, 202, once.replay);
  const name = requireString(body, 'agentRuntimeName', 1, 48, NAME_RE);
  const versionConfig = parseVersionConfig(body, config.lifecycleMinSeconds);
  const tags = validateTags(body.tags);
  assertNewRuntimeAllowed(store, name);
  const runtime = newRuntimeRecord(deps, region, name);
  await storeNewRuntime(store, runtime, versionConfig, tags);
  const response = {
    agentRuntimeArn: runtime.arn,
    agentRuntimeId: runtime.id,
    agentRuntimeVersion: '1',
    createdAt: runtime.createdAt,
    status: runtime.status,
    workloadIdentityDetails: { workloadIdentityArn: runtime.workloadIdentityArn },
  };
  await once.remember(response);
  logger.info('runtime created', { runtimeId: runtime.id, name });
  settle(runtime.id, 1, 'READY', 'CREATE_FAILED');
  sendJson(ctx.res, 202, response);
}

/** Names are unique, and there are at most 1000 runtimes. */
function assertNewRuntimeAllowed(store: Store, name: string): void {
  const existing = store.list('runtime', { offset: 0, limit: 100_000 }).find((r) => r.name === name);
  if (existing)
    throw new RuntimeApiError(
      'ConflictException',
      `An agent runtime named ${name} already exists (${existing.id})`,
    );
  if (store.count('runtime') >= 1000)
    throw new RuntimeApiError('ServiceQuotaExceededException', 'Agent runtime limit (1000) reached');
}

function newRuntimeRecord({ config }: RuntimeRouteDeps, region: string, name: string): RuntimeRecord {
  const id = newRuntimeId(name);
  const createdAt = now();
  return {
    id,
    name,
    arn: runtimeArn(region, config.accountId, id),
    latestVersion: 1,
    status: 'CREATING',
    createdAt,
    lastUpdatedAt: createdAt,
    workloadIdentityArn: workloadIdentityArn(region, config.accountId, id),
  };
}

/** The runtime, its version 1 and its tags; a name another replica took meanwhile is a conflict. */
async function storeNewRuntime(
  store: Store,
  runtime: RuntimeRecord,
  versionConfig: VersionConfig,
  tags: Record<string, string> | undefined,
): Promise<void> {
  const { id, name, createdAt } = runtime;
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
}

/** ListAgentRuntimes: each runtime as of its latest version. */
function listRuntimes({ store }: RuntimeRouteDeps, ctx: RouteContext): void {
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
}

/** GetAgentRuntime: the runtime's status, or with `?version=` that version's. */
function getRuntime({ store }: RuntimeRouteDeps, ctx: RouteContext): void {
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
}

/** UpdateAgentRuntime: a new version, the runtime UPDATING until it settles. */
async function updateRuntime(deps: RuntimeRouteDeps, ctx: RouteContext): Promise<void> {
  const { config, store, logger, settle } = deps;
  const runtime = getRuntimeOr404(store, ctx.params.runtimeId as string);
  const body = await readWriteRequest(ctx.req);
  for (const field of ['agentRuntimeName', 'tags'])
    if (body[field] !== undefined) throw validationError(field, 'cannot be changed by UpdateAgentRuntime');
  const versionConfig = parseVersionConfig(body, config.lifecycleMinSeconds);
  const version = nextVersionOf(runtime);
  const at = now();
  await storeNewVersion(store, runtime, version, versionConfig, at);
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
}

/** The number an update gives its version: only a settled runtime updates, up to version 99999. */
function nextVersionOf(runtime: RuntimeRecord): number {
  if (runtime.status === 'CREATING' || runtime.status === 'UPDATING' || runtime.status === 'DELETING')
    throw new RuntimeApiError(
      'ConflictException',
      `Agent runtime ${runtime.id} is ${runtime.status}; retry when it is READY`,
    );
  const version = runtime.latestVersion + 1;
  if (version > 99_999) throw new RuntimeApiError('ServiceQuotaExceededException', 'Version limit reached');
  return version;
}

/** The version first, then the runtime pointing at it (UPDATING, its last failure cleared). */
async function storeNewVersion(
  store: Store,
  runtime: RuntimeRecord,
  version: number,
  versionConfig: VersionConfig,
  at: string,
): Promise<void> {
  await store.put(
    'version',
    `${runtime.id}#${version}`,
    { runtimeId: runtime.id, version, config: versionConfig, status: 'CREATING', createdAt: at },
    runtime.id,
    version,
  );
  const next: RuntimeRecord = { ...runtime, latestVersion: version, status: 'UPDATING', lastUpdatedAt: at };
  delete next.failureReason;
  await store.put('runtime', runtime.id, next, '', Date.parse(runtime.createdAt));
}

/** DeleteAgentRuntime: with `?version=` one version, else the runtime, finished after the answer. */
async function deleteRuntime(deps: RuntimeRouteDeps, ctx: RouteContext): Promise<void> {
  const { store, finishDelete } = deps;
  const runtime = getRuntimeOr404(store, ctx.params.runtimeId as string);
  const version = versionParam(ctx);
  if (ctx.query.get('clientToken') !== null) validateClientToken(ctx.query.get('clientToken'));
  if (version !== undefined) return deleteVersion(deps, ctx, runtime, version);
  await store.put(
    'runtime',
    runtime.id,
    { ...runtime, status: 'DELETING', lastUpdatedAt: now() },
    '',
    Date.parse(runtime.createdAt),
  );
  sendJson(ctx.res, 202, { status: 'DELETING', agentRuntimeId: runtime.id });
  await finishDelete(runtime);
}

/** One version, neither the latest nor one an endpoint serves; its snapshot is pruned after. */
async function deleteVersion(
  { store, pins }: RuntimeRouteDeps,
  ctx: RouteContext,
  runtime: RuntimeRecord,
  version: number,
): Promise<void> {
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
    throw new RuntimeApiError('ConflictException', `Version ${version} is used by endpoint ${pinned.name}`);
  await store.delete('version', `${runtime.id}#${version}`);
  void pins.prune();
  sendJson(ctx.res, 202, {
    status: 'DELETING',
    agentRuntimeId: runtime.id,
    agentRuntimeVersion: String(version),
  });
}

/** ListAgentRuntimeVersions. */
function listRuntimeVersions({ store }: RuntimeRouteDeps, ctx: RouteContext): void {
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
}

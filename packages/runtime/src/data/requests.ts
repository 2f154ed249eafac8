// How every data-plane route reads its request: the runtime the path's label names (an ARN, or a
// bare id with `?accountId=`), the version its `?qualifier=` endpoint serves, the caller
// authenticated against that version's authorizer, the runtime session id of the headers, the
// call's target on its span, the request captured on the span, and whether the version can run.
// Built once by data-plane.ts and handed to each route module as `requests`.
import { randomUUID } from 'node:crypto';
import { type IncomingMessage } from 'node:http';
import { type RuntimeConfig } from '../config.js';
import { parseRuntimeArn } from '../control/arn.js';
import { getEndpointOr404, getRuntimeOr404, getVersionOr404 } from '../control/records.js';
import { type RuntimeRecord, type Store, type VersionRecord } from '../control/store.js';
import { validateSessionId } from '../control/validate.js';
import { RuntimeApiError, notFound, validationError } from '../errors.js';
import { header } from '../http/http-util.js';
import { type RouteContext } from '../http/router.js';
import { type Authenticator } from './auth.js';
import { CLOUD_SESSION_HEADER, SESSION_HEADER } from './forward-headers.js';
import { serverProtocolOf } from './protocols.js';
import { REQUEST_ATTRIBUTES, capturedRequest, replayOf } from './request-capture.js';
import { type RequestParts } from './websocket.js';

export interface RequestDeps {
  config: Readonly<RuntimeConfig>;
  store: Store;
  auth: Authenticator;
}

/** A runtime and the version its qualifier serves. */
export interface RuntimeVersion {
  runtime: RuntimeRecord;
  version: VersionRecord;
}

/** The data plane's reading of a request, bound to the runtime's config, store and authenticator. */
export interface Requests {
  /** The runtime the path's label names (404 or 400 naming the field when it names none). */
  resolveRuntime(parts: RequestParts): RuntimeRecord;
  /** The runtime and version the request names (404 or 400 naming the field when it names none). */
  resolve(parts: RequestParts): RuntimeVersion;
  /** Puts the runtime, version, qualifier and protocol on the call's span and metrics. */
  setTarget(parts: RequestParts, target: RuntimeVersion): void;
  /** Authenticates the caller against the version's authorizer (SigV4 or its JWT one). */
  authenticate(parts: RequestParts, target: RuntimeVersion): Promise<unknown>;
  /** `resolve`, `setTarget` and `authenticate`, in that order: what most routes start with. */
  admit(parts: RequestParts): Promise<RuntimeVersion>;
  /** The runtime session id of the headers; minted when absent and not `required`. */
  sessionIdOf(req: IncomingMessage, required: boolean): string;
  /** The id as given when it is a valid session id, else a 400 naming `runtimeSessionId`. */
  validSessionId(id: string): string;
  isValidSessionId(id: string): boolean;
  /** The request on the invocation's span (when captured), and the link of a replay to its original. */
  recordRequest(ctx: RouteContext, body: Buffer): void;
}

export function createRequests(deps: RequestDeps): Requests {
  const { config } = deps;
  const validSessionId = (id: string) => validateSessionId(id, config.laxSessionIds);
  const requests: Requests = {
    resolveRuntime: (parts) => resolveRuntime(deps, parts),
    resolve: (parts) => resolveTarget(deps, parts),
    setTarget,
    authenticate: (parts, target) => authenticate(deps, parts, target),
    async admit(parts) {
      const target = requests.resolve(parts);
      setTarget(parts, target);
      await requests.authenticate(parts, target);
      return target;
    },
    sessionIdOf: (req, required) => sessionIdOf(req, required, validSessionId),
    validSessionId,
    isValidSessionId(id) {
      try {
        validSessionId(id);
        return true;
      } catch {
        return false;
      }
    },
    recordRequest: (ctx, body) => recordRequest(ctx, body, config.captureRequests),
  };
  return requests;
}

/** The session id the caller gave in either session header, if any. */
export const givenSessionId = (req: IncomingMessage): string | undefined =>
  header(req, SESSION_HEADER) ?? header(req, CLOUD_SESSION_HEADER);

/** The endpoint the call names: `?qualifier=`, DEFAULT when absent. */
const qualifierOf = (parts: RequestParts) => parts.query.get('qualifier') ?? 'DEFAULT';

/** The label is a percent-decoded runtime ARN, or a bare id with `?accountId=`. */
function resolveRuntime({ store, config }: RequestDeps, parts: RequestParts): RuntimeRecord {
  const label = parts.params.runtime as string;
  const parsed = parseRuntimeArn(label);
  if (parsed) {
    if (parsed.endpointName)
      throw validationError('agentRuntimeArn', 'must be a runtime ARN, not an endpoint ARN (use qualifier)');
    const runtime = store.get('runtime', parsed.runtimeId);
    if (!runtime || runtime.arn !== label.replace(/^arn:aws(-[^:]+)?:/, 'arn:aws:'))
      throw notFound(`Agent runtime ${label} not found`);
    return runtime;
  }
  if (label.startsWith('arn:'))
    throw validationError('agentRuntimeArn', `${label} is not an agent runtime ARN`);
  const accountId = parts.query.get('accountId');
  if (accountId !== null && !/^[0-9]{12}$/.test(accountId))
    throw validationError('accountId', 'must be 12 digits');
  if (accountId !== null && accountId !== config.accountId)
    throw notFound(`Agent runtime ${label} not found in account ${accountId}`);
  return getRuntimeOr404(store, label);
}

function resolveTarget(deps: RequestDeps, parts: RequestParts): RuntimeVersion {
  const runtime = resolveRuntime(deps, parts);
  const endpoint = getEndpointOr404(deps.store, runtime, qualifierOf(parts));
  const version = getVersionOr404(deps.store, runtime.id, endpoint.liveVersion ?? endpoint.targetVersion);
  return { runtime, version };
}

function setTarget(parts: RequestParts, { runtime, version }: RuntimeVersion): void {
  parts.operation.setTarget({
    runtimeArn: runtime.arn,
    runtimeId: runtime.id,
    runtimeName: runtime.name,
    version: version.version,
    qualifier: qualifierOf(parts),
    protocol: serverProtocolOf(version),
  });
}

/** A JWT runtime's 401 challenge points at its protected-resource metadata (well-known-routes.ts). */
function authenticate(
  { config, auth }: RequestDeps,
  parts: RequestParts,
  { runtime, version }: RuntimeVersion,
) {
  const host = header(parts.req, 'host') ?? `${config.host}:${config.port}`;
  const metadataUrl = `http://${host}/runtimes/${encodeURIComponent(runtime.arn)}/invocations/.well-known/oauth-protected-resource?qualifier=${encodeURIComponent(qualifierOf(parts))}`;
  return auth.authenticate(
    parts.req,
    version.config.authorizerConfiguration?.customJWTAuthorizer,
    metadataUrl,
  );
}

function sessionIdOf(req: IncomingMessage, required: boolean, validSessionId: (id: string) => string) {
  const id = givenSessionId(req);
  if (id === undefined) {
    if (required)
      throw validationError(
        'runtimeSessionId',
        'is required (header X-Amzn-Bedrock-AgentCore-Runtime-Session-Id)',
      );
    return randomUUID(); // raw HTTP and OAuth callers may omit it: mint one and echo it back
  }
  return validSessionId(id);
}

function recordRequest(ctx: RouteContext, body: Buffer, captureRequests: boolean): void {
  const original = replayOf(ctx.req);
  if (original) {
    ctx.operation.linkTo(original.traceId, original.spanId, { 'agentrt.link.type': 'replay_of' });
    ctx.operation.setAttributes({
      [REQUEST_ATTRIBUTES.replayOfTrace]: original.traceId,
      [REQUEST_ATTRIBUTES.replayOfSpan]: original.spanId,
    });
  }
  if (captureRequests) ctx.operation.setAttributes(capturedRequest(ctx.req, body));
}

/**
 * A version a new session may start on: a version still being built or a runtime being deleted is
 * a retryable conflict, a runtime whose deletion failed a conflict, a failed version a client error.
 */
export function assertRunnable({ runtime, version }: RuntimeVersion): void {
  if (version.status === 'CREATING' || runtime.status === 'DELETING')
    throw new RuntimeApiError(
      'RetryableConflictException',
      `Agent runtime ${runtime.id} version ${version.version} is ${runtime.status === 'DELETING' ? 'DELETING' : 'not ready yet'}`,
    );
  if (runtime.status === 'DELETE_FAILED')
    throw new RuntimeApiError(
      'ConflictException',
      `Agent runtime ${runtime.id} is DELETE_FAILED (${runtime.failureReason ?? 'unknown reason'}); call DeleteAgentRuntime again`,
    );
  if (version.status !== 'READY')
    throw new RuntimeApiError(
      'RuntimeClientError',
      `Agent runtime ${runtime.id} version ${version.version} is ${version.status}: ${version.failureReason ?? 'unknown reason'}`,
    );
}

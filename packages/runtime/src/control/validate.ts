import { AMZN_CUSTOM_HEADER_PREFIX, isRestrictedHeader, sessionIdProblem } from '@agentrt/propagation';
import type { IncomingMessage } from 'node:http';
import { RuntimeApiError, validationError } from '../errors.js';
import { readJsonObject } from '../http/http-util.js';
import { environmentVariableProblem } from './environment.js';
import { type JwtAuthorizerConfig, type VersionConfig } from './store.js';

type Body = Record<string, unknown>;

export const NAME_RE = /^[a-zA-Z][a-zA-Z0-9_]{0,47}$/;
const ROLE_ARN_RE = /^arn:aws(-[^:]+)?:iam::([0-9]{12})?:role\/.+$/;
const TAG_RE = /^[a-zA-Z0-9\s._:/=+@-]*$/;
const HEADER_NAME_RE = /^[A-Za-z][A-Za-z0-9_-]{0,255}$/;
const SG_RE = /^sg-[0-9a-zA-Z]{8,17}$/;
const SUBNET_RE = /^subnet-[0-9a-zA-Z]{8,17}$/;
const MOUNT_DIR_RE = /^[a-zA-Z0-9._-]+$/;
const MAX_MOUNT_PATH_CHARS = 200;

export const DEFAULT_IDLE_S = 900;
export const DEFAULT_MAX_LIFETIME_S = 28_800;
const MAX_LIFECYCLE_S = 28_800;

function isObject(v: unknown): v is Body {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function requireString(body: Body, field: string, min: number, max: number, re?: RegExp): string {
  const value = body[field];
  if (value === undefined || value === null) throw validationError(field, 'is required');
  return checkString(field, value, min, max, re);
}

export function optionalString(
  body: Body,
  field: string,
  min: number,
  max: number,
  re?: RegExp,
): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  return checkString(field, value, min, max, re);
}

function checkString(field: string, value: unknown, min: number, max: number, re?: RegExp): string {
  if (typeof value !== 'string') throw validationError(field, 'must be a string');
  if (value.length < min || value.length > max)
    throw validationError(field, `length ${value.length} is outside ${min}–${max}`);
  if (re && !re.test(value)) throw validationError(field, `does not match ${re.source}`);
  return value;
}

function stringList(field: string, value: unknown, min: number, max: number, itemMax = 1024): string[] {
  if (!Array.isArray(value)) throw validationError(field, 'must be a list of strings');
  if (value.length < min || value.length > max) throw validationError(field, `must have ${min}–${max} items`);
  return value.map((item, i) => checkString(`${field}[${i}]`, item, 1, itemMax));
}

function singleUnionMember(field: string, value: unknown, known: string[]): [string, Body] {
  if (!isObject(value)) throw validationError(field, 'must be an object with exactly one member');
  const keys = Object.keys(value);
  if (keys.length !== 1) throw validationError(field, `must set exactly one of ${known.join(', ')}`);
  const key = keys[0] as string;
  if (!known.includes(key))
    throw validationError(field, `unknown member ${key}; expected one of ${known.join(', ')}`);
  const member = value[key];
  if (!isObject(member)) throw validationError(`${field}.${key}`, 'must be an object');
  return [key, member];
}

function artifact(value: unknown): VersionConfig['agentRuntimeArtifact'] {
  if (value === undefined) throw validationError('agentRuntimeArtifact', 'is required');
  const [kind, member] = singleUnionMember('agentRuntimeArtifact', value, [
    'containerConfiguration',
    'codeConfiguration',
  ]);
  if (kind === 'codeConfiguration')
    throw validationError(
      'agentRuntimeArtifact.codeConfiguration',
      'S3 code artifacts are not supported locally; use containerConfiguration.containerUri (file://<dir> or an image)',
    );
  const containerUri = requireString(member, 'containerUri', 1, 1024);
  if (/\s/.test(containerUri))
    throw validationError(
      'agentRuntimeArtifact.containerConfiguration.containerUri',
      'must not contain whitespace',
    );
  return { containerConfiguration: { containerUri } };
}

function network(value: unknown): VersionConfig['networkConfiguration'] {
  if (value === undefined) return { networkMode: 'PUBLIC' };
  if (!isObject(value)) throw validationError('networkConfiguration', 'must be an object');
  const mode = value.networkMode;
  if (mode !== 'PUBLIC' && mode !== 'VPC')
    throw validationError('networkConfiguration.networkMode', 'must be PUBLIC or VPC');
  if (mode === 'VPC') {
    const cfg = value.networkModeConfig;
    if (!isObject(cfg))
      throw validationError('networkConfiguration.networkModeConfig', 'is required for VPC');
    stringList('networkConfiguration.networkModeConfig.securityGroups', cfg.securityGroups, 1, 16).forEach(
      (sg, i) => {
        if (!SG_RE.test(sg))
          throw validationError(
            `networkConfiguration.networkModeConfig.securityGroups[${i}]`,
            `does not match ${SG_RE.source}`,
          );
      },
    );
    stringList('networkConfiguration.networkModeConfig.subnets', cfg.subnets, 1, 16).forEach((sn, i) => {
      if (!SUBNET_RE.test(sn))
        throw validationError(
          `networkConfiguration.networkModeConfig.subnets[${i}]`,
          `does not match ${SUBNET_RE.source}`,
        );
    });
  }
  return value as VersionConfig['networkConfiguration'];
}

function lifecycleSeconds(field: string, value: unknown, minSeconds: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value))
    throw validationError(field, 'must be an integer (seconds)');
  if (value < minSeconds || value > MAX_LIFECYCLE_S)
    throw validationError(field, `${value} is outside ${minSeconds}–${MAX_LIFECYCLE_S} seconds`);
  return value;
}

/** Applies the documented defaults: idle 900, max 28800; a max ≤ 900 alone caps idle too. */
function lifecycle(value: unknown, minSeconds: number): VersionConfig['lifecycleConfiguration'] {
  if (value !== undefined && !isObject(value))
    throw validationError('lifecycleConfiguration', 'must be an object');
  const v = (value ?? {}) as Body;
  const idle = lifecycleSeconds(
    'lifecycleConfiguration.idleRuntimeSessionTimeout',
    v.idleRuntimeSessionTimeout,
    minSeconds,
  );
  const max = lifecycleSeconds('lifecycleConfiguration.maxLifetime', v.maxLifetime, minSeconds);
  const maxLifetime = max ?? DEFAULT_MAX_LIFETIME_S;
  const idleRuntimeSessionTimeout = idle ?? Math.min(DEFAULT_IDLE_S, maxLifetime);
  if (idleRuntimeSessionTimeout > maxLifetime)
    throw validationError(
      'lifecycleConfiguration.idleRuntimeSessionTimeout',
      `${idleRuntimeSessionTimeout} must not exceed maxLifetime ${maxLifetime}`,
    );
  return { idleRuntimeSessionTimeout, maxLifetime };
}

function authorizer(value: unknown): VersionConfig['authorizerConfiguration'] {
  if (value === undefined) return undefined;
  const [, jwt] = singleUnionMember('authorizerConfiguration', value, ['customJWTAuthorizer']);
  const field = 'authorizerConfiguration.customJWTAuthorizer';
  const discoveryUrl = jwt.discoveryUrl;
  if (typeof discoveryUrl !== 'string' || !/.+\/\.well-known\/openid-configuration$/.test(discoveryUrl))
    throw validationError(
      `${field}.discoveryUrl`,
      'must be a URL ending in /.well-known/openid-configuration',
    );
  try {
    new URL(discoveryUrl);
  } catch {
    throw validationError(`${field}.discoveryUrl`, 'is not a valid URL');
  }
  const out: JwtAuthorizerConfig = { discoveryUrl };
  if (jwt.allowedAudience !== undefined)
    out.allowedAudience = stringList(`${field}.allowedAudience`, jwt.allowedAudience, 1, 1000);
  if (jwt.allowedClients !== undefined)
    out.allowedClients = stringList(`${field}.allowedClients`, jwt.allowedClients, 1, 1000);
  if (jwt.allowedScopes !== undefined)
    out.allowedScopes = stringList(`${field}.allowedScopes`, jwt.allowedScopes, 1, 1000, 255);
  return { customJWTAuthorizer: { ...jwt, ...out } };
}

function headerAllowlist(value: unknown): VersionConfig['requestHeaderConfiguration'] {
  if (value === undefined) return undefined;
  if (!isObject(value) || Object.keys(value).join() !== 'requestHeaderAllowlist')
    throw validationError(
      'requestHeaderConfiguration',
      'must set exactly one member: requestHeaderAllowlist',
    );
  const field = 'requestHeaderConfiguration.requestHeaderAllowlist';
  const list = stringList(field, (value as Body).requestHeaderAllowlist, 1, 20, 256);
  const seen = new Set<string>();
  list.forEach((name, i) => {
    const lower = name.toLowerCase();
    const where = `${field}[${i}]`;
    if (!HEADER_NAME_RE.test(name)) throw validationError(where, `${name} is not a valid header name`);
    if (seen.has(lower)) throw validationError(where, `${name} is listed twice`);
    seen.add(lower);
    if (lower.startsWith('x-amz-'))
      throw validationError(where, `${name}: x-amz- headers cannot be allowlisted`);
    if (lower.startsWith('x-amzn-') && !lower.startsWith(AMZN_CUSTOM_HEADER_PREFIX))
      throw validationError(
        where,
        `${name}: x-amzn- headers cannot be allowlisted (except ${AMZN_CUSTOM_HEADER_PREFIX}*)`,
      );
    if (isRestrictedHeader(lower))
      throw validationError(where, `${name} is a restricted header and is never forwarded`);
  });
  return { requestHeaderAllowlist: list };
}

function environment(value: unknown): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) throw validationError('environmentVariables', 'must be a map of string to string');
  const entries = Object.entries(value);
  if (entries.length > 50)
    throw validationError('environmentVariables', `has ${entries.length} entries; the limit is 50`);
  for (const [key, v] of entries) {
    if (key.length < 1 || key.length > 100)
      throw validationError(`environmentVariables.${key}`, 'key length must be 1–100');
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key))
      throw validationError(`environmentVariables.${key}`, 'key must be a valid variable name');
    if (typeof v !== 'string' || v.length > 5000)
      throw validationError(`environmentVariables.${key}`, 'value must be a string of at most 5000 chars');
    const problem = environmentVariableProblem(key, v);
    if (problem) throw validationError(`environmentVariables.${key}`, problem);
  }
  return value as Record<string, string>;
}

/**
 * Why a filesystem `mountPath` is refused, or undefined when it is fine: a path is exactly one
 * directory under `/mnt` (`/mnt/data`, a trailing `/` allowed), so no `.`/`..` or empty segment
 * can point the mount at `/mnt` itself or outside it.
 */
function mountPathProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'must be a string';
  if (value.length > MAX_MOUNT_PATH_CHARS) return `length ${value.length} is over ${MAX_MOUNT_PATH_CHARS}`;
  if (value.includes('\0')) return 'must not contain NUL';
  if (!value.startsWith('/mnt/')) return 'must be an absolute path under /mnt/ (e.g. /mnt/data)';
  const dir = value.slice('/mnt/'.length).replace(/\/$/, '');
  if (dir.includes('/') || dir === '')
    return 'must name exactly one directory under /mnt/ (no empty segments)';
  if (dir === '.' || dir === '..') return `must not use a ${dir} segment`;
  if (!MOUNT_DIR_RE.test(dir))
    return `directory name ${JSON.stringify(dir)} does not match ${MOUNT_DIR_RE.source}`;
  return undefined;
}

function filesystems(value: unknown): unknown[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length > 5)
    throw validationError('filesystemConfigurations', 'must be a list of at most 5 entries');
  value.forEach((entry, i) => {
    const [kind, member] = singleUnionMember(`filesystemConfigurations[${i}]`, entry, [
      'sessionStorage',
      's3FilesAccessPoint',
      'efsAccessPoint',
      'capacityProviderVolume',
    ]);
    const problem = mountPathProblem(member.mountPath);
    if (problem) throw validationError(`filesystemConfigurations[${i}].${kind}.mountPath`, problem);
  });
  return value;
}

/** Tags: 0–50, key 1–128, value 0–256, both `[a-zA-Z0-9\s._:/=+@-]*`. */
export function validateTags(value: unknown, field = 'tags'): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) throw validationError(field, 'must be a map of string to string');
  const entries = Object.entries(value);
  if (entries.length > 50) throw validationError(field, `has ${entries.length} entries; the limit is 50`);
  for (const [key, v] of entries) {
    if (key.length < 1 || key.length > 128 || !TAG_RE.test(key))
      throw validationError(`${field}.${key}`, 'key must be 1–128 chars of [a-zA-Z0-9 ._:/=+@-]');
    if (typeof v !== 'string' || v.length > 256 || !TAG_RE.test(v))
      throw validationError(`${field}.${key}`, 'value must be 0–256 chars of [a-zA-Z0-9 ._:/=+@-]');
  }
  return value as Record<string, string>;
}

/** The version-defining fields shared by Create and Update. */
export function parseVersionConfig(body: Body, lifecycleMinSeconds: number): VersionConfig {
  const config: VersionConfig = {
    agentRuntimeArtifact: artifact(body.agentRuntimeArtifact),
    roleArn: requireString(body, 'roleArn', 1, 2048, ROLE_ARN_RE),
    networkConfiguration: network(body.networkConfiguration),
    lifecycleConfiguration: lifecycle(body.lifecycleConfiguration, lifecycleMinSeconds),
  };
  const description = optionalString(body, 'description', 1, 4096);
  if (description !== undefined) config.description = description;
  const auth = authorizer(body.authorizerConfiguration);
  if (auth) config.authorizerConfiguration = auth;
  const headers = headerAllowlist(body.requestHeaderConfiguration);
  if (headers) config.requestHeaderConfiguration = headers;
  if (body.protocolConfiguration !== undefined) {
    const p = body.protocolConfiguration;
    if (!isObject(p) || !['HTTP', 'MCP', 'A2A', 'AGUI'].includes(p.serverProtocol as string))
      throw validationError('protocolConfiguration.serverProtocol', 'must be HTTP, MCP, A2A or AGUI');
    config.protocolConfiguration = { serverProtocol: p.serverProtocol as string };
  }
  if (body.metadataConfiguration !== undefined) {
    const m = body.metadataConfiguration;
    if (!isObject(m) || typeof m.requireMMDSV2 !== 'boolean')
      throw validationError('metadataConfiguration.requireMMDSV2', 'must be a boolean');
    config.metadataConfiguration = { requireMMDSV2: m.requireMMDSV2 };
  }
  const env = environment(body.environmentVariables);
  if (env) config.environmentVariables = env;
  const fs = filesystems(body.filesystemConfigurations);
  if (fs) config.filesystemConfigurations = fs;
  if (body.capacityProviderConfiguration !== undefined) {
    const c = body.capacityProviderConfiguration;
    if (!isObject(c) || typeof c.capacityProviderArn !== 'string')
      throw validationError('capacityProviderConfiguration.capacityProviderArn', 'is required');
    config.capacityProviderConfiguration = { capacityProviderArn: c.capacityProviderArn };
  }
  const platformVersion = optionalString(body, 'platformVersion', 1, 128, /^\S+$/);
  if (platformVersion !== undefined) config.platformVersion = platformVersion;
  return config;
}

export function validateClientToken(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  return checkString('clientToken', value, 33, 256, /^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,256}$/);
}

/** `maxResults` 1–100 (default 100) and an opaque `nextToken` holding the offset. */
export function parsePaging(query: URLSearchParams): { offset: number; limit: number } {
  const max = query.get('maxResults');
  let limit = 100;
  if (max !== null) {
    limit = Number(max);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      throw validationError('maxResults', 'must be an integer 1–100');
  }
  const token = query.get('nextToken');
  let offset = 0;
  if (token !== null) {
    const decoded = /^[A-Za-z0-9_-]{1,2048}$/.test(token)
      ? Buffer.from(token, 'base64url').toString('utf8')
      : '';
    const match = /^o:(\d{1,9})$/.exec(decoded);
    if (!match) throw validationError('nextToken', 'is not a token this server issued');
    offset = Number(match[1]);
  }
  return { offset, limit };
}

export function nextToken(offset: number, limit: number, total: number): string | undefined {
  return offset + limit < total ? Buffer.from(`o:${offset + limit}`).toString('base64url') : undefined;
}

/** Session ids: 33–256 chars (AWS), or 1–256 in lax mode. */
export function validateSessionId(value: string, lax: boolean): string {
  // AWS's minimum length is the runtime's only rule of its own; the rest is @agentrt/propagation's.
  const min = lax ? 1 : 33;
  if (value.length < min) throw validationError('runtimeSessionId', `length ${value.length} is under ${min}`);
  const problem = sessionIdProblem(value);
  if (problem) throw validationError('runtimeSessionId', problem);
  return value;
}

export function assertObjectBody(body: unknown): asserts body is Body {
  if (!isObject(body)) throw new RuntimeApiError('ValidationException', 'body: must be a JSON object');
}

/** A control-plane write's JSON object body (at most 1 MB), its `clientToken` checked. */
export async function readWriteRequest(req: IncomingMessage): Promise<Record<string, unknown>> {
  const body = await readJsonObject(req, 1_000_000);
  validateClientToken(body.clientToken);
  return body;
}

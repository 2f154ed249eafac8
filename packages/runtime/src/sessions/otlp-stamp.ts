import { RuntimeApiError, validationError } from '../errors.js';
import { RUNTIME_METRIC_NAMES } from '../telemetry/metric-names.js';

// The relay's one rule: what a session's OTLP/JSON export may claim, and what is stamped on it.

/** Service names of agentrt's own processes (the runtime's is `agentrt-runtime`): never a tenant's. */
const AGENTRT_SERVICE_PREFIX = 'agentrt-';

export const SIGNALS = {
  '/v1/traces': { resources: 'resourceSpans', scopes: 'scopeSpans', items: 'spans' },
  '/v1/logs': { resources: 'resourceLogs', scopes: 'scopeLogs', items: 'logRecords' },
  '/v1/metrics': { resources: 'resourceMetrics', scopes: 'scopeMetrics', items: 'metrics' },
} as const;
export type SignalPath = keyof typeof SIGNALS;
const METRIC_KINDS = ['gauge', 'sum', 'histogram', 'exponentialHistogram', 'summary'] as const;
/** The dimensions of the runtime's own metrics (Invocations, Latency, vCPU, …): the runtime's alone. */
const RUNTIME_METRIC_DIMENSIONS = ['Resource', 'Name', 'Operation'] as const;

export type Json = Record<string, unknown>;
/** Attribute key → the one value a session may send (`null`: it may send none). */
type IdentityRule = ReadonlyMap<string, string | null>;
/** Visits one part of an item that carries attributes; `item` parts get the session stamped. */
type AttributeVisit = (holder: Json, field: string, level: string, item: boolean) => void;

/** Who a session's telemetry is from: what the relay stamps, and the only values it lets through. */
export interface RelayIdentity {
  runtimeArn: string;
  runtimeId: string;
  runtimeName: string;
  /** The tenant's `service.name` (see tenantServiceName). */
  serviceName: string;
}
/**
 * The `service.name` a tenant's telemetry carries: its configured OTEL_SERVICE_NAME, unless blank or
 * the name of one of agentrt's own services, whose telemetry only agentrt writes; then the runtime's
 * name (AWS runtime names have no `-`, so never one of those).
 */
export function tenantServiceName(configured: string | undefined, runtimeName: string): string {
  const name = configured?.trim();
  return name && !name.startsWith(AGENTRT_SERVICE_PREFIX) ? name : runtimeName;
}

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * OTLP/JSON spells its fields in lowerCamelCase. Other decoders also take the proto names
 * (`resource_spans`, `data_points`): what such an alias carries would pass unchecked, so it is refused.
 */
function camelCaseOnly(o: Json, field: string): Json {
  for (const key of Object.keys(o))
    if (key.includes('_'))
      throw validationError(
        field,
        `has ${JSON.stringify(key.slice(0, 64))}: OTLP/JSON fields are lowerCamelCase`,
      );
  return o;
}

/** The objects of an OTLP list (absent or null: none), refusing anything else (400). */
export function objects(value: unknown, field: string): Json[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw validationError(field, 'must be a list of objects');
  for (const o of value as unknown[]) {
    if (!isObject(o)) throw validationError(field, 'must be a list of objects');
    camelCaseOnly(o, field);
  }
  return value as Json[];
}

function objectAt(holder: Json, field: string): Json {
  const value = (holder[field] ??= {});
  if (!isObject(value)) throw validationError(field, 'must be an object');
  return camelCaseOnly(value, field);
}

function identityRule(path: SignalPath, who: RelayIdentity, sessionId: string | undefined): IdentityRule {
  const rule = new Map<string, string | null>([
    ['session.id', sessionId ?? null],
    ['service.name', who.serviceName],
    ['cloud.resource_id', who.runtimeArn],
    ['aws.bedrock.agentcore.runtime.arn', who.runtimeArn],
    ['aws.bedrock.agentcore.runtime.id', who.runtimeId],
    ['aws.bedrock.agentcore.runtime.name', who.runtimeName],
  ]);
  if (path === '/v1/metrics') for (const key of RUNTIME_METRIC_DIMENSIONS) rule.set(key, null);
  return rule;
}

function refused(key: string, allowed: string | null, level: string): RuntimeApiError {
  let why = `only ${JSON.stringify(allowed)}, this session's own, is allowed`;
  if (allowed === null)
    why =
      key === 'session.id'
        ? 'this worker serves no session yet'
        : `${key} is a dimension of the runtime's own metrics`;
  return new RuntimeApiError('AccessDeniedException', `${level} attribute ${key} refused: ${why}`);
}

/**
 * Checks every occurrence of an identity key in one attribute list (so a duplicate key cannot slip
 * a second value past the first): its value must be exactly `{stringValue: <the allowed value>}`.
 */
function checkAttributes(holder: Json, field: string, rule: IdentityRule, level: string): void {
  for (const kv of objects(holder[field], `${level}.${field}`)) {
    if (typeof kv.key !== 'string' || !rule.has(kv.key)) continue;
    const allowed = rule.get(kv.key) ?? null;
    const value = kv.value;
    const exact = isObject(value) && Object.keys(value).length === 1 && value.stringValue === allowed;
    if (allowed === null || !exact) throw refused(kv.key, allowed, level);
  }
}

/** A tenant metric may not take the name of one of the runtime's own (Invocations, vCPU, …). */
function refuseRuntimeMetricName(metric: Json): void {
  if (typeof metric.name === 'string' && RUNTIME_METRIC_NAMES.has(metric.name))
    throw new RuntimeApiError(
      'AccessDeniedException',
      `metric ${metric.name} refused: the name is one of the runtime's own metrics`,
    );
}

/** Adds the keys the (already checked) attribute list lacks. */
function stampAttributes(holder: Json, stamps: readonly (readonly [string, string])[]): void {
  const list = (holder.attributes ??= []) as Json[];
  for (const [key, value] of stamps)
    if (!list.some((kv) => kv.key === key)) list.push({ key, value: { stringValue: value } });
}

/** Every part of one span, log record or metric that carries attributes. */
function eachAttributeHolder(path: SignalPath, item: Json, visit: AttributeVisit): void {
  if (path === '/v1/metrics') {
    for (const kind of METRIC_KINDS) {
      if (item[kind] === undefined || item[kind] === null) continue;
      for (const point of objects(objectAt(item, kind).dataPoints, `${kind}.dataPoints`)) {
        visit(point, 'attributes', 'data point', true);
        for (const exemplar of objects(point.exemplars, 'exemplars'))
          visit(exemplar, 'filteredAttributes', 'exemplar', false);
      }
    }
    return;
  }
  if (path === '/v1/logs') return visit(item, 'attributes', 'log record', true);
  visit(item, 'attributes', 'span', true);
  for (const event of objects(item.events, 'events')) visit(event, 'attributes', 'span event', false);
  for (const link of objects(item.links, 'links')) visit(link, 'attributes', 'span link', false);
}

export function signalOf(path: string): SignalPath {
  if (Object.hasOwn(SIGNALS, path)) return path as SignalPath;
  throw new RuntimeApiError(
    'ResourceNotFoundException',
    `the telemetry relay serves /v1/traces, /v1/logs and /v1/metrics, not ${path}`,
  );
}

/**
 * The relay's one rule, applied to one OTLP/JSON export of any signal: every attribute list in it
 * (resource, scope, span, event, link, log record, data point, exemplar) may carry the identity keys
 * only with this session's own values (403 naming the attribute otherwise, duplicates included), and
 * a metric may not carry the runtime's metric dimensions. Every resource then gets the session's
 * `session.id`, the runtime ARN (`cloud.resource_id`) and `service.name`; every span, log record and
 * data point gets `session.id`. Without a session (a warm-pool worker) no `session.id` is allowed
 * or stamped. Mutates and returns `body`.
 */
export function stampOtlp(path: string, body: Json, who: RelayIdentity, sessionId: string | undefined): Json {
  const signal = signalOf(path);
  const rule = identityRule(signal, who, sessionId);
  const session = sessionId === undefined ? [] : ([['session.id', sessionId]] as const);
  const resourceStamps = [
    ...session,
    ['cloud.resource_id', who.runtimeArn],
    ['service.name', who.serviceName],
  ] as const;
  const { resources, scopes, items } = SIGNALS[signal];
  camelCaseOnly(body, 'body');
  const visit: AttributeVisit = (holder, field, level, item) => {
    checkAttributes(holder, field, rule, level);
    if (item) stampAttributes(holder, session);
  };
  for (const entry of objects(body[resources], resources)) {
    const resource = objectAt(entry, 'resource');
    checkAttributes(resource, 'attributes', rule, 'resource');
    stampAttributes(resource, resourceStamps);
    for (const scoped of objects(entry[scopes], scopes)) {
      checkAttributes(objectAt(scoped, 'scope'), 'attributes', rule, 'scope');
      for (const item of objects(scoped[items], items)) {
        if (signal === '/v1/metrics') refuseRuntimeMetricName(item);
        eachAttributeHolder(signal, item, visit);
      }
    }
  }
  return body;
}

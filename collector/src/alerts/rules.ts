// Cost alert rules: what they are and how a file or an API body becomes one (every field checked,
// a refusal names it). A rule sums the tokens or the USD cost of model calls (`chat` spans) over a
// rolling window per group — a session, a model, or any attribute's value (`user.id`) — and fires
// its webhook when a group's sum reaches the threshold.

export type AlertMeasure = 'tokens' | 'usd';

export interface AlertRule {
  /** Unique; letters, digits, `.`, `_`, `-` (1–64). */
  name: string;
  measure: AlertMeasure;
  threshold: number;
  windowSeconds: number;
  /** `session` (session.id), `model`, or an attribute key (span, then resource). */
  groupBy: string;
  /** Only spans whose attributes equal these values. */
  where: Record<string, string>;
  /** Where the firing is POSTed (http or https). */
  webhook: string;
}

export class AlertRuleError extends Error {
  override name = 'AlertRuleError';
}

const NAME_RE = /^[A-Za-z0-9._-]{1,64}$/;
const MAX_RULES = 200;
const MAX_WINDOW_SECONDS = 31 * 24 * 3600;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function positive(v: unknown, field: string, max: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > max)
    throw new AlertRuleError(`${field} must be a number above 0 and at most ${max}`);
  return v;
}

function webhookOf(v: unknown, field: string): string {
  if (typeof v !== 'string' || v.length > 2048 || !URL.canParse(v))
    throw new AlertRuleError(`${field} must be an http(s) URL`);
  const url = new URL(v);
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new AlertRuleError(`${field} must be an http(s) URL`);
  return url.href;
}

function whereOf(v: unknown, field: string): Record<string, string> {
  if (v === undefined) return {};
  if (!isObject(v) || Object.keys(v).length > 20)
    throw new AlertRuleError(`${field} must be an object of at most 20 attribute: "value" pairs`);
  for (const [key, value] of Object.entries(v))
    if (typeof value !== 'string' || key.length > 256 || value.length > 1024)
      throw new AlertRuleError(`${field}.${key} must be a string (keys ≤ 256, values ≤ 1024 characters)`);
  return v as Record<string, string>;
}

/** One rule from untrusted JSON; `at` prefixes the field names of a refusal (`rules[2].`). */
export function parseRule(v: unknown, at = ''): AlertRule {
  if (!isObject(v)) throw new AlertRuleError(`${at || 'rule'} must be an object`);
  const known = ['name', 'measure', 'threshold', 'windowSeconds', 'groupBy', 'where', 'webhook'];
  const unknown = Object.keys(v).find((k) => !known.includes(k));
  if (unknown) throw new AlertRuleError(`${at}${unknown} is not a rule field (${known.join(', ')})`);
  if (typeof v.name !== 'string' || !NAME_RE.test(v.name))
    throw new AlertRuleError(`${at}name must be 1-64 letters, digits, '.', '_' or '-'`);
  if (v.measure !== 'tokens' && v.measure !== 'usd')
    throw new AlertRuleError(`${at}measure must be 'tokens' or 'usd'`);
  const groupBy = v.groupBy ?? 'session';
  if (typeof groupBy !== 'string' || groupBy.length === 0 || groupBy.length > 256)
    throw new AlertRuleError(`${at}groupBy must be 'session', 'model' or an attribute key`);
  return {
    name: v.name,
    measure: v.measure,
    threshold: positive(v.threshold, `${at}threshold`, 1e12),
    windowSeconds: positive(v.windowSeconds, `${at}windowSeconds`, MAX_WINDOW_SECONDS),
    groupBy,
    where: whereOf(v.where, `${at}where`),
    webhook: webhookOf(v.webhook, `${at}webhook`),
  };
}

/** A rules document `{"rules": [...]}` (a file, or PUT /api/alerts/rules). */
export function parseRules(v: unknown): AlertRule[] {
  if (!isObject(v) || !Array.isArray(v.rules)) throw new AlertRuleError('rules must be an array');
  if (v.rules.length > MAX_RULES) throw new AlertRuleError(`rules holds more than ${MAX_RULES} rules`);
  const rules = v.rules.map((r, i) => parseRule(r, `rules[${i}].`));
  const seen = new Set<string>();
  for (const [i, r] of rules.entries()) {
    if (seen.has(r.name)) throw new AlertRuleError(`rules[${i}].name '${r.name}' is used twice`);
    seen.add(r.name);
  }
  return rules;
}

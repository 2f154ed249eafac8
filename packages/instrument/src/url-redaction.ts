/**
 * Redacts credentials from URL-valued attributes (`url.full`, `url.query`, `http.url`, …) of every
 * span and log record, whichever instrumentation set them (fetch/undici, http, our server span):
 * the values of sensitive query parameters become `REDACTED`, as do the user and password of a
 * `scheme://user:pass@host` URL. Follows the OpenTelemetry semantic conventions for `url.full` and
 * `url.query` and adds the parameters agents and AWS use.
 */

/** Replacement of a redacted query value or userinfo part (the semconv spelling). */
export const URL_REDACTED = 'REDACTED';

/** Query parameters the OpenTelemetry semantic conventions redact by default. */
export const SEMCONV_REDACTED_QUERY_PARAMS: readonly string[] = [
  'AWSAccessKeyId',
  'Signature',
  'sig',
  'X-Goog-Signature',
];

/** Query parameters redacted by default (matched case-insensitively). */
export const DEFAULT_REDACTED_QUERY_PARAMS: readonly string[] = [
  ...SEMCONV_REDACTED_QUERY_PARAMS,
  'access_token',
  'token',
  'password',
  'api_key',
  'key',
  'secret',
  'X-Amz-Signature',
  'X-Amz-Credential',
  'X-Amz-Security-Token',
];

/** Attribute keys whose value is a whole URL or URL-like target. */
const URL_KEYS = new Set([
  'url.full',
  'url.original',
  'http.url',
  'http.target',
  'server.url',
  'url.template',
]);
/** Attribute keys whose value is a query string without `?`. */
const QUERY_KEYS = new Set(['url.query', 'http.query']);

/** How an attribute's string value is checked: as a URL, as a query string, or only if it looks like an http(s) URL. */
export type UrlKeyKind = 'url' | 'query' | 'other';

export interface UrlRedactor {
  /** Whether the attribute under `key` is checked: a URL key, a query key, or a string that looks like an http(s) URL. */
  redactAttribute(key: string, value: unknown): string | undefined;
  /** The kind of `key` (for callers that remember it per key). */
  keyKind(key: string): UrlKeyKind;
  /** {@link redactAttribute} for a key of kind `kind`. */
  redactValue(kind: UrlKeyKind, value: unknown): string | undefined;
  /** `url` with sensitive query values and userinfo redacted (the same string when nothing is). */
  redactUrl(url: string): string;
  /** A query string (no `?`) with sensitive values redacted. */
  redactQuery(query: string): string;
}

const keyKind = (key: string): UrlKeyKind =>
  QUERY_KEYS.has(key) ? 'query' : URL_KEYS.has(key) ? 'url' : 'other';

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' ')).toLowerCase();
  } catch {
    return name.toLowerCase();
  }
}

/** A redactor for the default parameters plus `extra` (names, case-insensitive). */
export function createUrlRedactor(extra: readonly string[] = []): UrlRedactor {
  const names = new Set([...DEFAULT_REDACTED_QUERY_PARAMS, ...extra].map((n) => n.toLowerCase()));

  function redactQuery(query: string): string {
    if (!query) return query;
    let changed = false;
    const parts = query.split('&').map((part) => {
      const eq = part.indexOf('=');
      const name = eq < 0 ? part : part.slice(0, eq);
      if (!names.has(decodeName(name))) return part;
      if (eq >= 0 && part.slice(eq + 1) === URL_REDACTED) return part;
      changed = true;
      return `${name}=${URL_REDACTED}`;
    });
    return changed ? parts.join('&') : query;
  }

  function redactUrl(url: string): string {
    // most URLs carry neither userinfo nor a query: nothing to slice or match
    if (url.indexOf('@') < 0 && url.indexOf('?') < 0) return url;
    let out = url;
    // userinfo: scheme://user:pass@host
    const scheme = out.indexOf('://');
    if (scheme > 0) {
      const authorityEnd = out.slice(scheme + 3).search(/[/?#]/);
      const authority =
        authorityEnd < 0 ? out.slice(scheme + 3) : out.slice(scheme + 3, scheme + 3 + authorityEnd);
      const at = authority.lastIndexOf('@');
      if (at >= 0) {
        const user = authority.slice(0, at);
        const redacted = user.includes(':') ? `${URL_REDACTED}:${URL_REDACTED}` : URL_REDACTED;
        if (user !== redacted) out = `${out.slice(0, scheme + 3)}${redacted}${out.slice(scheme + 3 + at)}`;
      }
    }
    const q = out.indexOf('?');
    if (q < 0) return out;
    const hash = out.indexOf('#', q);
    const query = hash < 0 ? out.slice(q + 1) : out.slice(q + 1, hash);
    const redacted = redactQuery(query);
    if (redacted === query) return out;
    return `${out.slice(0, q + 1)}${redacted}${hash < 0 ? '' : out.slice(hash)}`;
  }

  function redactValue(kind: UrlKeyKind, value: unknown): string | undefined {
    if (typeof value !== 'string') return undefined;
    let next: string;
    if (kind === 'query') {
      const question = value.startsWith('?');
      next = redactQuery(question ? value.slice(1) : value);
      if (question) next = `?${next}`;
    } else if (
      kind === 'url' ||
      // Any other attribute holding an http(s) URL with a query or userinfo (cheap checks first).
      (value.length > 8 && value.charCodeAt(0) === 104 && /^https?:\/\//.test(value))
    )
      next = redactUrl(value);
    else return undefined;
    return next === value ? undefined : next;
  }

  return {
    redactUrl,
    redactQuery,
    keyKind,
    redactValue,
    redactAttribute: (key, value) => redactValue(keyKind(key), value),
  };
}

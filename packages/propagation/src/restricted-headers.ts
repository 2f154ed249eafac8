/**
 * Headers the platform never forwards into a container: transport, caching, browser and proxy
 * headers that describe the hop rather than the caller's intent (the AWS runtime's restricted list,
 * plus the usual CDN/proxy additions). The hosting runtime refuses them in a runtime's header
 * allow-list, and the contract server keeps them out of the entrypoint's context. Lowercase. Names
 * that a family prefix covers (`content-*`, `proxy-*`, `x-forwarded-*` …) are not listed again.
 */
export const RESTRICTED_HEADERS: ReadonlySet<string> = new Set([
  'accept',
  'accept-charset',
  'accept-encoding',
  'accept-language',
  'accept-ranges',
  'age',
  'allow',
  'alt-svc',
  'cache-control',
  'clear-site-data',
  'connection',
  'cookie',
  'date',
  'dnt',
  'etag',
  'expect',
  'expires',
  'forwarded',
  'host',
  'if-match',
  'if-modified-since',
  'if-none-match',
  'if-range',
  'if-unmodified-since',
  'keep-alive',
  'last-modified',
  'link',
  'location',
  'max-forwards',
  'origin',
  'pragma',
  'range',
  'referer',
  'referrer-policy',
  'retry-after',
  'server',
  'set-cookie',
  'strict-transport-security',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'upgrade-insecure-requests',
  'user-agent',
  'vary',
  'via',
  'warning',
  'www-authenticate',
  'x-content-type-options',
  'x-frame-options',
  'x-real-ip',
  'x-requested-with',
  'x-xss-protection',
]);

/** Prefixes of restricted header families (`content-*`, `sec-*`, pseudo-headers …). */
export const RESTRICTED_HEADER_PREFIXES: readonly string[] = [
  'access-control-',
  'cf-',
  'content-',
  'proxy-',
  'sec-',
  'x-forwarded-',
  ':',
];

/** True when `name` (lowercase) is a restricted header, by exact name or family prefix. */
export function isRestrictedHeader(name: string): boolean {
  return RESTRICTED_HEADERS.has(name) || RESTRICTED_HEADER_PREFIXES.some((prefix) => name.startsWith(prefix));
}

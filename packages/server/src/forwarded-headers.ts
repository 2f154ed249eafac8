import {
  AMZN_CUSTOM_HEADER_PREFIX,
  CLOUD_CUSTOM_HEADER_PREFIX,
  WORKLOAD_ACCESS_TOKEN_HEADER,
} from '@agentrt/propagation';

// Headers that describe the transport or the browser rather than the caller's intent. They never
// reach the entrypoint's context (the same idea as the AWS runtime's restricted header list).
const RESTRICTED = new Set([
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
  'content-disposition',
  'content-encoding',
  'content-language',
  'content-length',
  'content-location',
  'content-range',
  'content-security-policy',
  'content-type',
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
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
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
const RESTRICTED_PREFIXES = ['access-control-', 'sec-', 'x-forwarded-', 'cf-', ':'];
const ALWAYS = [CLOUD_CUSTOM_HEADER_PREFIX, AMZN_CUSTOM_HEADER_PREFIX];

/**
 * Picks the request headers an entrypoint may see.
 *
 * - With no allow-list: every header except the transport/browser ones above, `x-amz-*` (other than
 *   the workload access token) and `x-amzn-*` (AWS-internal, other than the custom prefix) — the
 *   Python SDK's rule.
 * - With an allow-list: only the named headers (case-insensitive), plus `authorization` only if named.
 *
 * Custom headers (`x-cloud-agent-runtime-custom-*`, `x-amzn-bedrock-agentcore-runtime-custom-*`) always
 * pass. Names are lowercase; repeated headers are joined with `, `.
 */
export function pickForwardedHeaders(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  allowList?: ReadonlySet<string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [rawName, rawValue] of Object.entries(headers)) {
    if (rawValue === undefined) continue;
    const name = rawName.toLowerCase();
    if (!isForwarded(name, allowList)) continue;
    out[name] = Array.isArray(rawValue) ? rawValue.join(', ') : rawValue;
  }
  return out;
}

function isForwarded(name: string, allowList: ReadonlySet<string> | undefined): boolean {
  if (ALWAYS.some((p) => name.startsWith(p))) return true;
  if (allowList) return allowList.has(name);
  if (RESTRICTED.has(name) || RESTRICTED_PREFIXES.some((p) => name.startsWith(p))) return false;
  if (name.startsWith('x-amz-')) return name === WORKLOAD_ACCESS_TOKEN_HEADER;
  return !name.startsWith('x-amzn-');
}

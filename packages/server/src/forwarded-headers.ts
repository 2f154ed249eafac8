import {
  AMZN_CUSTOM_HEADER_PREFIX,
  CLOUD_CUSTOM_HEADER_PREFIX,
  WORKLOAD_ACCESS_TOKEN_HEADER,
  isRestrictedHeader,
} from '@agentrt/propagation';

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
  if (isRestrictedHeader(name)) return false;
  if (name.startsWith('x-amz-')) return name === WORKLOAD_ACCESS_TOKEN_HEADER;
  return !name.startsWith('x-amzn-');
}

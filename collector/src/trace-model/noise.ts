/**
 * Traces a user rarely wants in the trace list: health probes, synthetic checks (`agentrt doctor`)
 * and the observability stack's own traffic. The default trace list hides them; `noise=include`
 * (API), `--all` (CLI) and "show probes & internal" (UI) bring them back.
 */
import type { AttributeValue, SpanRecord } from '../wire-types.js';

export type TraceNoise = 'probe' | 'synthetic' | 'internal';

/** The attribute (span or resource) that marks telemetry a tool made to test the stack. */
export const SYNTHETIC_ATTRIBUTE = 'agentrt.synthetic';

/** Paths of health and readiness probes (Kubernetes, load balancers, the agent contract's /ping). */
export const PROBE_PATHS: ReadonlySet<string> = new Set([
  '/ping',
  '/health',
  '/healthz',
  '/livez',
  '/readyz',
  '/ready',
  '/live',
]);

/** Services of agentrt's own observability stack: their traces are the tooling's, not the user's. */
export const INTERNAL_SERVICES: ReadonlySet<string> = new Set(['agentrt-collector']);

/** `agentrt doctor`'s service name: its round-trip spans are synthetic even without the marker (older CLIs). */
export const DOCTOR_SERVICE = 'agentrt-doctor';

/**
 * `rpc.service` of the hosting runtime's control plane (create, get, list, update runtimes): the
 * stack's housekeeping — `agentrt dev` registering its agents, `agentrt invoke` looking a name up —
 * not an agent's work.
 */
export const CONTROL_PLANE_RPC_SERVICE = 'BedrockAgentCoreControl';

/** OTLP/HTTP export paths: a span of a call to them is telemetry shipping, not the user's work. */
const OTLP_PATHS = new Set(['/v1/traces', '/v1/metrics', '/v1/logs']);

const text = (v: AttributeValue | undefined): string | undefined =>
  typeof v === 'string' && v !== '' ? v : undefined;

/** The path an HTTP span is about: its route, else the path of its URL. */
function httpPath(span: SpanRecord): string | undefined {
  const a = span.attributes;
  const path = text(a['http.route']) ?? text(a['url.path']) ?? text(a['http.target']);
  if (path) return path.split('?', 1)[0];
  const url = text(a['url.full']) ?? text(a['http.url']);
  if (!url) return undefined;
  try {
    return new URL(url).pathname;
  } catch {
    return undefined; // Not a URL: nothing to say about the path.
  }
}

/**
 * What kind of noise a trace is, judged by its main span (the root, or the span that continued a
 * remote caller's trace) and any span or resource marked synthetic; undefined for a user's trace.
 */
export function traceNoise(
  main: SpanRecord | undefined,
  spans: readonly SpanRecord[],
): TraceNoise | undefined {
  for (const s of spans)
    if (
      s.attributes[SYNTHETIC_ATTRIBUTE] !== undefined ||
      s.resource.attributes[SYNTHETIC_ATTRIBUTE] !== undefined
    )
      return 'synthetic';
  if (!main) return undefined;
  const service = String(main.resource.attributes['service.name'] ?? '');
  if (service === DOCTOR_SERVICE) return 'synthetic';
  if (INTERNAL_SERVICES.has(service)) return 'internal';
  if (main.kind === 'SERVER' && main.attributes['rpc.service'] === CONTROL_PLANE_RPC_SERVICE)
    return 'internal';
  const path = httpPath(main);
  if (path === undefined) {
    // An HTTP span named only by method and path (`GET /healthz`) without attributes.
    const named = /^(GET|HEAD) (\/\S*)$/.exec(main.name);
    return named && PROBE_PATHS.has(named[2]!) ? 'probe' : undefined;
  }
  const method =
    text(main.attributes['http.request.method']) ?? text(main.attributes['http.method']) ?? 'GET';
  if ((method === 'GET' || method === 'HEAD') && PROBE_PATHS.has(path)) return 'probe';
  if (main.kind === 'CLIENT' && OTLP_PATHS.has(path)) return 'internal';
  return undefined;
}

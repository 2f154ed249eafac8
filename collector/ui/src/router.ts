/** Hash routing (`#/traces/abc?span=def`): shareable links, no server routes needed. */

export type Route =
  | { view: 'agents' }
  | { view: 'logs'; sessionId?: string; traceId?: string; service?: string; severity?: string; q?: string }
  | { view: 'sessions' }
  | { view: 'session'; sessionId: string }
  | { view: 'traces'; filters: TraceFilters }
  | TraceRoute
  | { view: 'search'; query?: string }
  | { view: 'compare'; a?: string; b?: string }
  | { view: 'live' }
  | { view: 'inspector'; host?: string; runtime?: string }
  | { view: 'evals' }
  | { view: 'eval-run'; runId: string }
  | { view: 'eval-compare'; base: string; run: string };

/**
 * One trace's view: the selected span, the waterfall's filter and root, and its folding — every
 * span `depth` or more levels below the root closed (unset: none), the spans in `fold` the other
 * way round — so a shared link opens the same view.
 */
export interface TraceRoute {
  view: 'trace';
  traceId: string;
  spanId?: string;
  filter?: string;
  root?: string;
  depth?: number;
  fold?: string[];
}

export interface TraceFilters {
  service?: string;
  status?: 'error' | 'ok';
  minDurationMs?: number;
  q?: string;
  /** Traces started in [startMs, endMs): the time bucket of a chart point. */
  startMs?: number;
  endMs?: number;
  /** Also list health probes, synthetic checks and the stack's own traffic (hidden by default). */
  noise?: 'include';
}

function query(params: Record<string, string | number | undefined>): string {
  const entries = Object.entries(params).filter(([, v]) => v !== undefined && v !== '');
  if (entries.length === 0) return '';
  return '?' + new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString();
}

/** The hash (with leading '#') for a route. */
export function routeHref(route: Route): string {
  switch (route.view) {
    case 'agents':
      return '#/agents';
    case 'logs':
      return `#/logs${query({
        sessionId: route.sessionId,
        traceId: route.traceId,
        service: route.service,
        severity: route.severity,
        q: route.q,
      })}`;
    case 'sessions':
      return '#/sessions';
    case 'session':
      return `#/sessions/${encodeURIComponent(route.sessionId)}`;
    case 'traces':
      return `#/traces${query({ ...route.filters })}`;
    case 'trace':
      return `#/traces/${encodeURIComponent(route.traceId)}${query({
        span: route.spanId,
        filter: route.filter,
        root: route.root,
        depth: route.depth,
        fold: route.fold?.join(','),
      })}`;
    case 'search':
      return `#/search${query({ q: route.query })}`;
    case 'compare':
      return `#/compare${query({ a: route.a, b: route.b })}`;
    case 'live':
      return '#/live';
    case 'inspector':
      return `#/inspector${query({ host: route.host, runtime: route.runtime })}`;
    case 'evals':
      return '#/evals';
    case 'eval-run':
      return `#/evals/${encodeURIComponent(route.runId)}`;
    case 'eval-compare':
      return `#/eval-compare${query({ base: route.base, run: route.run })}`;
  }
}

const SPAN_ID_RE = /^[0-9a-f]{16}$/i;

/** A trace route's parameters; a malformed depth or span id in `fold` is left out. */
function traceRoute(traceId: string, get: (k: string) => string | undefined): TraceRoute {
  const route: TraceRoute = { view: 'trace', traceId };
  const [span, filter, root] = [get('span'), get('filter'), get('root')];
  if (span) route.spanId = span;
  if (filter) route.filter = filter;
  if (root) route.root = root;
  const depth = Number(get('depth'));
  if (get('depth') && Number.isInteger(depth) && depth >= 0 && depth <= 1000) route.depth = depth;
  const fold = (get('fold') ?? '').split(',').filter((id) => SPAN_ID_RE.test(id));
  if (fold.length) route.fold = fold;
  return route;
}

/** Parses a location hash; anything unknown goes to the Agents view. */
export function parseRoute(hash: string): Route {
  const raw = hash.replace(/^#/, '');
  const [path = '', search = ''] = raw.split('?', 2);
  const params = new URLSearchParams(search);
  const get = (k: string): string | undefined => params.get(k) || undefined;
  const parts = path.split('/').filter(Boolean).map(safeDecode);
  switch (parts[0]) {
    case 'agents':
      return { view: 'agents' };
    case 'logs': {
      const route: Route = { view: 'logs' };
      const sessionId = get('sessionId');
      const traceId = get('traceId');
      const service = get('service');
      const severity = get('severity');
      const q = get('q');
      if (sessionId) route.sessionId = sessionId;
      if (traceId) route.traceId = traceId;
      if (service) route.service = service;
      if (severity) route.severity = severity;
      if (q) route.q = q;
      return route;
    }
    case 'sessions':
      return parts[1] ? { view: 'session', sessionId: parts[1] } : { view: 'sessions' };
    case 'traces': {
      if (parts[1]) return traceRoute(parts[1], get);
      const filters: TraceFilters = {};
      const service = get('service');
      const status = get('status');
      const min = Number(get('minDurationMs'));
      const q = get('q');
      const startMs = Number(get('startMs'));
      const endMs = Number(get('endMs'));
      if (service) filters.service = service;
      if (status === 'error' || status === 'ok') filters.status = status;
      if (Number.isFinite(min) && min > 0) filters.minDurationMs = min;
      if (q) filters.q = q;
      if (Number.isFinite(startMs) && startMs > 0) filters.startMs = startMs;
      if (Number.isFinite(endMs) && endMs > 0) filters.endMs = endMs;
      if (get('noise') === 'include') filters.noise = 'include';
      return { view: 'traces', filters };
    }
    case 'search': {
      const q = get('q');
      return q ? { view: 'search', query: q } : { view: 'search' };
    }
    case 'compare': {
      const route: Route = { view: 'compare' };
      const a = get('a');
      const b = get('b');
      if (a) route.a = a;
      if (b) route.b = b;
      return route;
    }
    case 'live':
      return { view: 'live' };
    case 'inspector': {
      const route: Route = { view: 'inspector' };
      const host = get('host');
      const runtime = get('runtime');
      if (host) route.host = host;
      if (runtime) route.runtime = runtime;
      return route;
    }
    case 'evals':
      return parts[1] ? { view: 'eval-run', runId: parts[1] } : { view: 'evals' };
    case 'eval-compare': {
      const base = get('base');
      const run = get('run');
      return base && run ? { view: 'eval-compare', base, run } : { view: 'evals' };
    }
    default:
      return { view: 'agents' };
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s; // A hand-edited link with a stray '%': use it as typed.
  }
}

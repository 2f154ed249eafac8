import { isIP } from 'node:net';

/**
 * The Host and cross-site checks every agentrt server makes before routing a request (the
 * collector and the runtime alike): one pure function over the method and headers.
 *
 * - DNS rebinding: a page on a name the attacker controls, re-pointed at 127.0.0.1, reaches a local
 *   server with its own name in `Host`. Only loopback names (`localhost`, `*.localhost`), IP
 *   literals and the configured names are accepted.
 * - Cross-site simple requests: a browser sends a POST with `text/plain`, form or multipart bodies
 *   to any origin without a CORS preflight. State-changing requests are refused when the browser
 *   says they come from another site (`Sec-Fetch-Site`, `Origin`), and whatever their origin when
 *   their body has one of those content types (no API of ours takes them; allowSimpleBodies opts out).
 */

export interface RequestGuardOptions {
  /**
   * Host names accepted in `Host` besides `localhost`, `*.localhost` and IP literals (case-
   * insensitive, without port; a leading `.` accepts subdomains: `.example.com`). `*` accepts any
   * host (turns the Host check off).
   */
  allowedHosts?: readonly string[];
  /** Origins (`https://ui.example.com`) allowed to send state-changing requests from another site. */
  allowedOrigins?: readonly string[];
  /** Accept text/plain, form and multipart bodies on state-changing requests (default false). */
  allowSimpleBodies?: boolean;
}

/** What the guard looks at: Node's `req.method` and `req.headers` fit as they are. */
export interface GuardedRequest {
  method?: string | undefined;
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
}

/** Why a request was refused: an HTTP status, a stable code and a message for the client. */
export interface RequestGuardRefusal {
  status: 400 | 403 | 415;
  code: 'bad_host' | 'host_not_allowed' | 'cross_site' | 'unsupported_media_type';
  message: string;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Content types a browser sends cross-origin without a CORS preflight. */
const SIMPLE_TYPES = new Set(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data']);

function header(req: GuardedRequest, name: string): string | undefined {
  const v = req.headers[name];
  const first = typeof v === 'string' ? v : v?.[0];
  return first?.trim() || undefined;
}

/** The host name of a `Host` value (`[::1]:80` → `::1`, `Example.COM.:8080` → `example.com`), or undefined. */
export function hostName(hostHeader: string): string | undefined {
  let host = hostHeader.trim().toLowerCase();
  if (host.startsWith('[')) {
    const close = host.indexOf(']');
    if (close < 0) return undefined;
    const rest = host.slice(close + 1);
    if (rest && !/^:\d{1,5}$/.test(rest)) return undefined;
    host = host.slice(1, close);
    return isIP(host) === 6 ? host : undefined;
  }
  const colon = host.lastIndexOf(':');
  if (colon >= 0) {
    if (!/^\d{1,5}$/.test(host.slice(colon + 1))) return undefined;
    host = host.slice(0, colon);
  }
  if (host.endsWith('.')) host = host.slice(0, -1);
  // RFC 3986 reg-name characters we accept in a name: letters, digits, '-', '.', '_'.
  return /^[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$/.test(host) ? host : undefined;
}

function hostAllowed(host: string, allowed: readonly string[]): boolean {
  if (isIP(host) || host === 'localhost' || host.endsWith('.localhost')) return true;
  return allowed.some((a) => {
    const name = a.trim().toLowerCase();
    if (name === '*') return true;
    if (name.startsWith('.')) return host.endsWith(name) || host === name.slice(1);
    return host === name;
  });
}

/** `scheme://host[:port]` of an Origin value, lowercased, or undefined for `null` and garbage. */
function parseOrigin(value: string): URL | undefined {
  if (value === 'null') return undefined;
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

/**
 * Checks a request's Host and, for state-changing methods, whether a browser sent it from another
 * site. Returns undefined when the request may proceed, else why not. Never throws.
 */
export function checkRequest(
  req: GuardedRequest,
  options: RequestGuardOptions = {},
): RequestGuardRefusal | undefined {
  const allowedHosts = options.allowedHosts ?? [];
  const hostHeader = header(req, 'host');
  if (!allowedHosts.includes('*')) {
    const host = hostHeader === undefined ? undefined : hostName(hostHeader);
    if (host === undefined) {
      return { status: 400, code: 'bad_host', message: 'the Host header is missing or malformed' };
    }
    if (!hostAllowed(host, allowedHosts)) {
      return {
        status: 403,
        code: 'host_not_allowed',
        message: `Host '${host}' is not one of this server's names; add it to the allowed hosts`,
      };
    }
  }
  const method = (req.method ?? 'GET').toUpperCase();
  if (SAFE_METHODS.has(method)) return undefined;

  const originValue = header(req, 'origin');
  const origin = originValue === undefined ? undefined : parseOrigin(originValue);
  const allowedOrigin =
    origin !== undefined &&
    (options.allowedOrigins ?? []).some((o) => parseOrigin(o)?.origin === origin.origin);
  const site = header(req, 'sec-fetch-site')?.toLowerCase();
  const crossSite = (site === 'cross-site' || site === 'same-site') && !allowedOrigin;
  // An Origin that is not this server's own (by the Host it was sent to) and not an allowed one.
  const foreignOrigin =
    originValue !== undefined &&
    !allowedOrigin &&
    (origin === undefined || hostHeader === undefined || origin.host !== hostHeader.trim().toLowerCase());
  if (crossSite || foreignOrigin) {
    return {
      status: 403,
      code: 'cross_site',
      message: `cross-site ${method} refused (Origin ${originValue ?? '(none)'}${site ? `, Sec-Fetch-Site ${site}` : ''})`,
    };
  }
  const type = header(req, 'content-type')?.split(';')[0]!.trim().toLowerCase();
  if (type !== undefined && SIMPLE_TYPES.has(type) && !options.allowSimpleBodies) {
    return {
      status: 415,
      code: 'unsupported_media_type',
      message: `Content-Type '${type}' is not accepted on ${method} requests; send application/json`,
    };
  }
  return undefined;
}

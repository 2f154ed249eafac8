import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { checkRequest } from '@agentrt/propagation';
import { HttpError } from '@agentrt/kit';

export interface AccessOptions {
  /** Extra Host names (see checkRequest); the bind address is added when it is a name. */
  allowedHosts?: readonly string[];
  allowedOrigins?: readonly string[];
  /** Bearer token for /v1/* when set. */
  ingestToken?: string;
  /** Bearer token (or the UI's cookie) for /api/* when set. */
  queryToken?: string;
}

/** The cookie the web UI carries the query token in, once opened as `/?token=…`. */
export const QUERY_TOKEN_COOKIE = 'agentrt_query_token';

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

function sameToken(given: string | undefined, expected: Buffer): boolean {
  return given !== undefined && timingSafeEqual(digest(given), expected);
}

function bearer(req: IncomingMessage): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return m?.[1];
}

function cookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return undefined; // a malformed cookie is no token
      }
    }
  }
  return undefined;
}

/**
 * The collector's access rules, checked before routing: Host and cross-site checks (the shared
 * request guard), then the ingest token on /v1/* and the query token on /api/*.
 */
export function createAccessGuard(options: AccessOptions) {
  const guard = { allowedHosts: options.allowedHosts ?? [], allowedOrigins: options.allowedOrigins ?? [] };
  const ingest = options.ingestToken ? digest(options.ingestToken) : undefined;
  const query = options.queryToken ? digest(options.queryToken) : undefined;
  return {
    /** Throws HttpError (400/401/403/415) when the request may not reach `path`. */
    check(req: IncomingMessage, path: string): void {
      const refusal = checkRequest(req, guard);
      if (refusal) throw new HttpError(refusal.status, refusal.message, { code: refusal.code });
      if (ingest && path.startsWith('/v1/') && !sameToken(bearer(req), ingest)) {
        throw new HttpError(401, 'send the ingest token as Authorization: Bearer <token>', {
          code: 'unauthorized',
          headers: { 'www-authenticate': 'Bearer' },
        });
      }
      if (
        query &&
        path.startsWith('/api/') &&
        !sameToken(bearer(req), query) &&
        !sameToken(cookie(req, QUERY_TOKEN_COOKIE), query)
      ) {
        throw new HttpError(
          401,
          'send the query token as Authorization: Bearer <token>, or open the UI once as /?token=<token>',
          { code: 'unauthorized', headers: { 'www-authenticate': 'Bearer' } },
        );
      }
    },
    /**
     * `GET /?token=<query token>`: stores the token in an HttpOnly, SameSite=Strict cookie for the
     * UI's API calls and redirects to `/`. True when it answered the request.
     */
    login(req: IncomingMessage, url: URL, res: ServerResponse): boolean {
      const token = url.searchParams.get('token');
      if (!query || url.pathname !== '/' || token === null) return false;
      if (!sameToken(token, query)) throw new HttpError(401, 'wrong query token', { code: 'unauthorized' });
      res.writeHead(303, {
        location: '/',
        'set-cookie': `${QUERY_TOKEN_COOKIE}=${encodeURIComponent(token)}; Path=/; HttpOnly; SameSite=Strict`,
      });
      res.end();
      return true;
    },
  };
}

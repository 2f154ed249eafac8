import { type IncomingMessage } from 'node:http';
import { type JWTPayload, createRemoteJWKSet, jwtVerify } from 'jose';
import { type JwtAuthorizerConfig } from '../control/store.js';
import { RuntimeApiError } from '../errors.js';
import { header } from '../http/http-util.js';
import { parseSigV4 } from './sigv4.js';

/** Who called, as far as the runtime could tell. */
export interface Caller {
  method: 'sigv4' | 'api-key' | 'jwt' | 'anonymous';
  region?: string;
  /** Verified claims, for a JWT caller. */
  claims?: JWTPayload;
}

interface Discovery {
  issuer: string;
  jwks: ReturnType<typeof createRemoteJWKSet>;
}

export interface Authenticator {
  /** Checks the request against the server's API keys and, for JWT runtimes, the runtime's authorizer. */
  authenticate(
    req: IncomingMessage,
    jwt?: JwtAuthorizerConfig,
    resourceMetadataUrl?: string,
  ): Promise<Caller>;
}

function asList(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/**
 * Inbound auth. SigV4 is accepted without checking the signature (the region is read from the
 * credential scope). With API keys configured, a request needs `x-api-key` or a SigV4 access key id
 * equal to a key. A runtime with `customJWTAuthorizer` takes only `Authorization: Bearer <jwt>`,
 * verified against the JWKS its discovery URL names: no token → 401 with WWW-Authenticate, wrong
 * kind of credential → 403 "Authorization method mismatch", bad token → 401, disallowed audience or
 * client → 403.
 */
/**
 * `requireExp`: refuse bearer tokens without an `exp` claim (a token that never expires cannot be
 * revoked by waiting). On unless AGENTRT_JWT_REQUIRE_EXP=0.
 */
export function createAuthenticator(apiKeys: readonly string[], { requireExp = true } = {}): Authenticator {
  const discoveries = new Map<string, Promise<Discovery>>();
  const keys = new Set(apiKeys);

  const discover = (url: string): Promise<Discovery> => {
    let found = discoveries.get(url);
    if (!found) {
      found = (async () => {
        const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
        if (!res.ok) throw new Error(`discovery URL ${url} answered ${res.status}`);
        const doc = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
        if (typeof doc.issuer !== 'string' || typeof doc.jwks_uri !== 'string')
          throw new Error(`discovery document at ${url} lacks issuer or jwks_uri`);
        return { issuer: doc.issuer, jwks: createRemoteJWKSet(new URL(doc.jwks_uri)) };
      })();
      discoveries.set(url, found);
      // A failed discovery is retried on the next request instead of being cached for ever.
      found.catch(() => discoveries.delete(url));
    }
    return found;
  };

  const verifyJwt = async (token: string, cfg: JwtAuthorizerConfig): Promise<JWTPayload> => {
    let discovery: Discovery;
    try {
      discovery = await discover(cfg.discoveryUrl);
    } catch (error) {
      throw new RuntimeApiError(
        'AccessDeniedException',
        `Cannot verify the bearer token: ${(error as Error).message}`,
        {},
        { cause: error },
      );
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, discovery.jwks, {
        issuer: discovery.issuer,
        requiredClaims: requireExp ? ['exp'] : [],
      }));
    } catch (error) {
      throw new RuntimeApiError(
        'UnauthorizedException',
        `Invalid bearer token: ${(error as Error).message}`,
        {},
        { cause: error },
      );
    }
    const audOk = cfg.allowedAudience
      ? asList(payload.aud).some((a) => cfg.allowedAudience!.includes(a))
      : undefined;
    const clientOk = cfg.allowedClients
      ? [payload.client_id, payload.azp].some((c) => typeof c === 'string' && cfg.allowedClients!.includes(c))
      : undefined;
    // With both lists set, matching either is enough (a Cognito access token carries client_id, no aud).
    const allowed =
      audOk === undefined && clientOk === undefined ? true : audOk === true || clientOk === true;
    if (!allowed)
      throw new RuntimeApiError(
        'AccessDeniedException',
        'The bearer token audience or client is not allowed by the runtime authorizer',
      );
    if (cfg.allowedScopes) {
      const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ') : asList(payload.scp);
      if (!cfg.allowedScopes.some((s) => scopes.includes(s)))
        throw new RuntimeApiError('AccessDeniedException', 'The bearer token has none of the allowed scopes');
    }
    return payload;
  };

  return {
    async authenticate(req, jwt, resourceMetadataUrl) {
      const authorization = header(req, 'authorization');
      const bearer = authorization && /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
      const sigv4 = parseSigV4(authorization);
      if (jwt) {
        if (bearer) return { method: 'jwt', claims: await verifyJwt(bearer, jwt) };
        if (authorization)
          throw new RuntimeApiError(
            'AccessDeniedException',
            'Authorization method mismatch: this runtime uses OAuth (Authorization: Bearer <jwt>), not SigV4',
          );
        throw new RuntimeApiError(
          'UnauthorizedException',
          'Missing bearer token: this runtime requires Authorization: Bearer <jwt>',
          {},
          {
            headers: { 'www-authenticate': `Bearer resource_metadata="${resourceMetadataUrl ?? ''}"` },
          },
        );
      }
      if (bearer)
        throw new RuntimeApiError(
          'AccessDeniedException',
          'Authorization method mismatch: this runtime uses SigV4, not OAuth bearer tokens',
        );
      if (keys.size > 0) {
        const key = header(req, 'x-api-key') ?? sigv4?.accessKeyId;
        if (!key || !keys.has(key))
          throw new RuntimeApiError(
            'AccessDeniedException',
            'Missing or unknown API key: send x-api-key or use the key as the SigV4 access key id',
          );
        return { method: 'api-key', ...(sigv4 ? { region: sigv4.region } : {}) };
      }
      return sigv4 ? { method: 'sigv4', region: sigv4.region } : { method: 'anonymous' };
    },
  };
}

import { timingSafeEqual } from 'node:crypto';
import { HttpError } from '@agentrt/example-models';
import type { Middleware } from 'koa';

function sameKey(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * API-key check for the weather endpoints: the key comes in `x-api-key` or as
 * `Authorization: Bearer <key>`. With no keys configured every request passes (the seed's
 * unauthenticated service); with keys, a missing or wrong key is a 401 with a JSON detail.
 */
export function apiKeyAuth(keys: readonly string[], protectedPaths: readonly string[]): Middleware {
  return async function apiKeyMiddleware(ctx, next) {
    if (keys.length === 0 || !protectedPaths.includes(ctx.path)) return next();
    const header = ctx.get('x-api-key');
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1];
    const given = header || bearer;
    const challenge = { 'WWW-Authenticate': 'Bearer realm="weather"' };
    if (!given)
      throw new HttpError(
        401,
        'Missing API key: send it in the x-api-key header or as Authorization: Bearer <key>',
        challenge,
      );
    if (!keys.some((key) => sameKey(given, key))) throw new HttpError(401, 'Invalid API key', challenge);
    return next();
  };
}

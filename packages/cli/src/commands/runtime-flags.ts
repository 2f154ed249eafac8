// The create/update flags that map to AgentCore's JWT authorizer configuration: each mistake is a
// usage error that names the flag.
import { UsageError } from '../command.js';

export interface JwtFlags {
  'jwt-discovery-url'?: string;
  'jwt-audience'?: string[];
  'jwt-client'?: string[];
}

export interface JwtAuthorizer {
  authorizerConfiguration?: {
    customJWTAuthorizer: { discoveryUrl: string; allowedAudience?: string[]; allowedClients?: string[] };
  };
}

/** `--jwt-audience a,b --jwt-audience c` → ['a', 'b', 'c']; an empty item is a usage error. */
function list(flag: string, values: string[] | undefined): string[] | undefined {
  if (!values?.length) return undefined;
  const items = values.flatMap((v) => v.split(',')).map((v) => v.trim());
  if (items.some((v) => v === ''))
    throw new UsageError(`--${flag} needs a value (comma-separated for several)`);
  return items;
}

export function jwtAuthorizerFrom(values: JwtFlags): JwtAuthorizer {
  const out: JwtAuthorizer = {};
  const discoveryUrl = values['jwt-discovery-url'];
  const allowedAudience = list('jwt-audience', values['jwt-audience']);
  const allowedClients = list('jwt-client', values['jwt-client']);
  if (discoveryUrl === undefined) {
    if (allowedAudience || allowedClients)
      throw new UsageError(
        `--${allowedAudience ? 'jwt-audience' : 'jwt-client'} needs --jwt-discovery-url <url> (the issuer's .well-known/openid-configuration)`,
      );
  } else {
    if (
      !URL.canParse(discoveryUrl) ||
      !/^https?:\/\/.+\/\.well-known\/openid-configuration$/.test(discoveryUrl)
    )
      throw new UsageError(
        `--jwt-discovery-url must be an http(s) URL ending in /.well-known/openid-configuration, got '${discoveryUrl}'`,
      );
    if (!allowedAudience && !allowedClients)
      throw new UsageError('--jwt-discovery-url needs --jwt-audience <aud> or --jwt-client <id> (or both)');
    out.authorizerConfiguration = {
      customJWTAuthorizer: {
        discoveryUrl,
        ...(allowedAudience ? { allowedAudience } : {}),
        ...(allowedClients ? { allowedClients } : {}),
      },
    };
  }
  return out;
}

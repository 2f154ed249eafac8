/** What a SigV4 `Authorization` header says about its caller; the signature itself is not checked. */
export interface SigV4Scope {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
}

const SIGV4_RE = /^AWS4-HMAC-SHA256\s+Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/aws4_request/;

export function parseSigV4(authorization: string | undefined): SigV4Scope | undefined {
  if (!authorization) return undefined;
  const m = SIGV4_RE.exec(authorization);
  if (!m) return undefined;
  return {
    accessKeyId: m[1] as string,
    date: m[2] as string,
    region: m[3] as string,
    service: m[4] as string,
  };
}

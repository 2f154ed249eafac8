import { randomInt } from 'node:crypto';

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
export const RUNTIME_ID_RE = /^[a-zA-Z][a-zA-Z0-9_]{0,99}-[a-zA-Z0-9]{10}$/;
const RUNTIME_ARN_RE =
  /^arn:aws(-[^:]+)?:bedrock-agentcore:([a-z0-9-]+):([0-9]{12}):runtime\/([^/]+)(?:\/runtime-endpoint\/([^/]+))?$/;

/** `<name>-<10 alphanumerics>`, the documented runtime id form. */
export function newRuntimeId(name: string): string {
  let suffix = '';
  for (let i = 0; i < 10; i++) suffix += ALNUM[randomInt(ALNUM.length)];
  return `${name}-${suffix}`;
}

export function runtimeArn(region: string, accountId: string, runtimeId: string): string {
  return `arn:aws:bedrock-agentcore:${region}:${accountId}:runtime/${runtimeId}`;
}

export function endpointArn(runtimeArnValue: string, endpointName: string): string {
  return `${runtimeArnValue}/runtime-endpoint/${endpointName}`;
}

export function workloadIdentityArn(region: string, accountId: string, runtimeId: string): string {
  return `arn:aws:bedrock-agentcore:${region}:${accountId}:workload-identity-directory/default/workload-identity/${runtimeId}`;
}

/** Splits a runtime (or runtime-endpoint) ARN; undefined when it is not one. */
export function parseRuntimeArn(
  arn: string,
): { region: string; accountId: string; runtimeId: string; endpointName?: string } | undefined {
  const m = RUNTIME_ARN_RE.exec(arn);
  if (!m) return undefined;
  return {
    region: m[2] as string,
    accountId: m[3] as string,
    runtimeId: m[4] as string,
    ...(m[5] ? { endpointName: m[5] } : {}),
  };
}

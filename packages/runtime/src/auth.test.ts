import { AccessDeniedException as DataAccessDenied } from '@aws-sdk/client-bedrock-agentcore';
import { AccessDeniedException, GetAgentRuntimeCommand } from '@aws-sdk/client-bedrock-agentcore-control';
import { generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type TestRuntime,
  createReady,
  invokeJson,
  sdkClients,
  sessionId,
  startIdp,
  startRuntime,
} from './test-support.js';

describe('inbound auth', () => {
  let rt: TestRuntime;
  let idp: Awaited<ReturnType<typeof startIdp>>;
  beforeAll(async () => {
    [rt, idp] = await Promise.all([startRuntime(), startIdp()]);
  });
  afterAll(async () => {
    await Promise.all([rt?.close(), idp?.close()]);
  }, 30_000);

  it('verifies bearer JWTs against the discovery URL JWKS with allowed audience and clients', async () => {
    const runtime = await createReady(rt.control, 'jwt_agent', 'counter', {
      authorizerConfiguration: {
        customJWTAuthorizer: {
          discoveryUrl: `${idp.base}/.well-known/openid-configuration`,
          allowedAudience: ['agents'],
          allowedClients: ['web-app'],
        },
      },
      requestHeaderConfiguration: { requestHeaderAllowlist: ['Authorization'] },
    });
    const url = `${rt.server.url}/runtimes/${encodeURIComponent(runtime.agentRuntimeArn!)}/invocations?qualifier=DEFAULT`;
    const call = (authorization?: string) =>
      fetch(url, {
        method: 'POST',
        body: '{"prompt":"hi"}',
        headers: {
          'content-type': 'application/json',
          'x-amzn-bedrock-agentcore-runtime-session-id': sessionId('jwt'),
          ...(authorization ? { authorization } : {}),
        },
      });

    const none = await call();
    expect(none.status).toBe(401);
    expect(none.headers.get('x-amzn-errortype')).toBe('UnauthorizedException');
    expect(none.headers.get('www-authenticate')).toMatch(
      /^Bearer resource_metadata=".*oauth-protected-resource\?qualifier=DEFAULT"$/,
    );

    const { publicKey: _unused, privateKey: otherKey } = await generateKeyPair('RS256');
    const forged = await call(`Bearer ${await idp.sign({ aud: 'agents' }, otherKey)}`);
    expect(forged.status).toBe(401);
    expect(((await forged.json()) as { message: string }).message).toContain('Invalid bearer token');

    const forever = await call(`Bearer ${await idp.sign({ aud: 'agents' }, undefined, undefined, false)}`);
    expect(forever.status).toBe(401);
    expect(((await forever.json()) as { message: string }).message).toContain('"exp" claim');

    const wrongIssuer = await call(
      `Bearer ${await idp.sign({ aud: 'agents' }, undefined, 'https://evil.example')}`,
    );
    expect(wrongIssuer.status).toBe(401);

    const wrongAudience = await call(`Bearer ${await idp.sign({ aud: 'other', client_id: 'someone' })}`);
    expect(wrongAudience.status).toBe(403);
    expect(wrongAudience.headers.get('x-amzn-errortype')).toBe('AccessDeniedException');

    const token = await idp.sign({ aud: 'agents', sub: 'user-1' });
    const ok = await call(`Bearer ${token}`);
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { headers: Record<string, string> };
    expect(body.headers.authorization).toBe(`Bearer ${token}`);
    const byClient = await call(`Bearer ${await idp.sign({ client_id: 'web-app' })}`);
    expect(byClient.status).toBe(200);

    // The SDK signs with SigV4: a JWT runtime refuses that as a method mismatch.
    const sigv4 = await invokeJson(rt.data, runtime.agentRuntimeArn!, sessionId('sigv4'), {}).catch(
      (e: unknown) => e,
    );
    expect(sigv4).toBeInstanceOf(DataAccessDenied);
    expect((sigv4 as Error).message).toContain('Authorization method mismatch');
  });

  it('refuses a bearer token on a SigV4 runtime and never forwards Authorization there', async () => {
    const runtime = await createReady(rt.control, 'sigv4_agent', 'counter', {
      requestHeaderConfiguration: { requestHeaderAllowlist: ['Authorization'] },
    });
    const res = await fetch(
      `${rt.server.url}/runtimes/${encodeURIComponent(runtime.agentRuntimeArn!)}/invocations`,
      {
        method: 'POST',
        body: '{}',
        headers: { authorization: 'Bearer abc' },
      },
    );
    expect(res.status).toBe(403);
    expect(((await res.json()) as { message: string }).message).toContain('Authorization method mismatch');
    const out = (await invokeJson(rt.data, runtime.agentRuntimeArn!, sessionId('sig'), {})) as {
      headers: Record<string, string>;
    };
    expect(out.headers.authorization).toBeUndefined();
  });

  it('reads the region from the SigV4 credential scope for new ARNs', async () => {
    const { control } = sdkClients(rt.server.url, 'eu-west-1');
    const runtime = await createReady(control, 'in_ireland', 'counter');
    expect(runtime.agentRuntimeArn).toMatch(
      /^arn:aws:bedrock-agentcore:eu-west-1:123456789012:runtime\/in_ireland-/,
    );
    const out = (await invokeJson(rt.data, runtime.agentRuntimeArn!, sessionId('region'), {})) as {
      env: Record<string, string>;
    };
    expect(out.env.AWS_REGION).toBe('eu-west-1');
    control.destroy();
  });
});

describe('API keys', () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime({ apiKeys: ['local-key-1'] });
  });
  afterAll(async () => {
    await rt?.close();
  }, 30_000);

  it('accepts the key as x-api-key or as the SigV4 access key id and refuses anything else', async () => {
    const denied = await rt.control
      .send(new GetAgentRuntimeCommand({ agentRuntimeId: 'nope-0123456789' }))
      .catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(AccessDeniedException);
    const { control, data } = sdkClients(rt.server.url, 'us-east-1', 'local-key-1');
    const runtime = await createReady(control, 'keyed', 'counter');
    expect((await invokeJson(data, runtime.agentRuntimeArn!, sessionId('keyed'), {})).count).toBe(1);
    const raw = await fetch(`${rt.server.url}/runtimes/${runtime.agentRuntimeId}/`, {
      headers: { 'x-api-key': 'local-key-1' },
    });
    expect(raw.status).toBe(200);
    const wrong = await fetch(`${rt.server.url}/runtimes/${runtime.agentRuntimeId}/`, {
      headers: { 'x-api-key': 'guess' },
    });
    expect(wrong.status).toBe(403);
    control.destroy();
    data.destroy();
  });
});

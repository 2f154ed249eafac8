// Hostile and malformed HTTP input to the runtime's control and data planes: broken bodies and
// paths, replayed client tokens, raw callers by bare id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ROLE_ARN,
  type TestRuntime,
  createReady,
  fixtureUri,
  sessionId,
  startRuntime,
} from './test-support.js';

const artifact = (fixture: string) => ({ containerConfiguration: { containerUri: fixtureUri(fixture) } });

describe('hostile and malformed HTTP input', () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime({ maxBodyBytes: 1024 });
  });
  afterAll(async () => {
    await rt?.close();
  }, 30_000);

  const expectAwsError = async (res: Response, status: number, type: string, text: string) => {
    expect(res.status).toBe(status);
    expect(res.headers.get('x-amzn-errortype')).toBe(type);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as { message: string };
    expect(body.message).toContain(text);
  };

  it('answers GET /ping for health probes, and refuses other methods on it', async () => {
    const res = await fetch(`${rt.server.url}/ping`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: 'Healthy', sessions: 0, isolation: rt.server.isolation });
    expect(typeof body['time_of_last_update']).toBe('number');
    await expectAwsError(
      await fetch(`${rt.server.url}/ping`, { method: 'POST' }),
      400,
      'ValidationException',
      'not allowed',
    );
  });

  it('rejects broken JSON, non-object bodies, oversized payloads and bad paths with clear errors', async () => {
    const url = rt.server.url;
    await expectAwsError(
      await fetch(`${url}/runtimes/`, {
        method: 'PUT',
        body: '{"agentRuntimeName":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'ValidationException',
      'not valid JSON',
    );
    await expectAwsError(
      await fetch(`${url}/runtimes/`, { method: 'PUT', body: '[1,2]' }),
      400,
      'ValidationException',
      'must be a JSON object',
    );
    await expectAwsError(
      await fetch(`${url}/runtimes/`, {
        method: 'PUT',
        body: JSON.stringify({ pad: 'x'.repeat(2_000_000) }),
      }),
      400,
      'ValidationException',
      'body',
    );
    await expectAwsError(
      await fetch(`${url}/runtimes/%E0%A4%A/`),
      400,
      'ValidationException',
      'percent-encoding',
    );
    await expectAwsError(await fetch(`${url}/nowhere`), 404, 'ResourceNotFoundException', 'No operation');
    await expectAwsError(
      await fetch(`${url}/runtimes/`, { method: 'PATCH' }),
      400,
      'ValidationException',
      'PATCH',
    );
    await expectAwsError(
      await fetch(`${url}/runtimes/?maxResults=1000`, { method: 'POST' }),
      400,
      'ValidationException',
      'maxResults',
    );
    await expectAwsError(
      await fetch(`${url}/runtimes/?nextToken=forged`, { method: 'POST' }),
      400,
      'ValidationException',
      'nextToken',
    );
    await expectAwsError(
      await fetch(`${url}/runtimes/${encodeURIComponent('../../etc/passwd')}/`),
      404,
      'ResourceNotFoundException',
      'not found',
    );
    await expectAwsError(
      await fetch(
        `${url}/runtimes/${encodeURIComponent('arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/nope-0123456789')}/invocations`,
        { method: 'POST', body: '{}' },
      ),
      404,
      'ResourceNotFoundException',
      'not found',
    );
    const ready = await createReady(rt.control, 'small_body', 'counter');
    const arnPath = `${url}/runtimes/${encodeURIComponent(ready.agentRuntimeArn!)}`;
    await expectAwsError(
      await fetch(`${arnPath}/stopruntimesession`, { method: 'POST', body: '{}' }),
      400,
      'ValidationException',
      'runtimeSessionId',
    );
    await expectAwsError(
      await fetch(`${arnPath}/invocations?qualifier=nope`, {
        method: 'POST',
        body: '{}',
        headers: { 'x-amzn-bedrock-agentcore-runtime-session-id': sessionId('q') },
      }),
      404,
      'ResourceNotFoundException',
      'Endpoint nope',
    );
    await expectAwsError(await fetch(`${url}/tags/not-an-arn`), 400, 'ValidationException', 'resourceArn');
    await expectAwsError(
      await fetch(`${url}/runtimes/${ready.agentRuntimeId}/runtime-endpoints/`, {
        method: 'PUT',
        body: JSON.stringify({ name: 'DEFAULT' }),
      }),
      409,
      'ConflictException',
      'DEFAULT',
    );
    await expectAwsError(
      await fetch(`${url}/runtimes/${ready.agentRuntimeId}/runtime-endpoints/`, {
        method: 'PUT',
        body: JSON.stringify({ name: 'x-y' }),
      }),
      400,
      'ValidationException',
      'name',
    );
    await expectAwsError(
      await fetch(`${url}/runtimes/${ready.agentRuntimeId}/`, { method: 'PUT', body: '{{' }),
      400,
      'ValidationException',
      'not valid JSON',
    );
    await expectAwsError(
      await fetch(`${url}/runtimes/${ready.agentRuntimeId}/`, {
        method: 'PUT',
        body: JSON.stringify({
          agentRuntimeArtifact: { containerConfiguration: { containerUri: 'file:///x' } },
          roleArn: 'arn:aws:iam::123456789012:role/R',
          agentRuntimeName: 'rename',
        }),
      }),
      400,
      'ValidationException',
      'agentRuntimeName',
    );
    await expectAwsError(
      await fetch(`${url}/runtimes/${ready.agentRuntimeId}/?version=abc`),
      400,
      'ValidationException',
      'version',
    );
    const big = await fetch(`${url}/runtimes/${encodeURIComponent(ready.agentRuntimeArn!)}/invocations`, {
      method: 'POST',
      body: 'x'.repeat(4096),
      headers: { 'x-amzn-bedrock-agentcore-runtime-session-id': sessionId('oversize') },
    });
    await expectAwsError(big, 400, 'ValidationException', 'limit is 1024');
    expect(rt.server.sessions()).toHaveLength(0);
  });

  it('replays a create with the same clientToken and refuses the token with other parameters', async () => {
    const body = {
      agentRuntimeName: 'idempotent',
      agentRuntimeArtifact: artifact('counter'),
      roleArn: ROLE_ARN,
      clientToken: 'token-0000000000000000000000000000000001',
    };
    const put = (b: unknown) =>
      fetch(`${rt.server.url}/runtimes/`, { method: 'PUT', body: JSON.stringify(b) });
    const first = (await (await put(body)).json()) as { agentRuntimeId: string };
    const again = (await (await put(body)).json()) as { agentRuntimeId: string };
    expect(again.agentRuntimeId).toBe(first.agentRuntimeId);
    const other = await put({ ...body, description: 'different' });
    expect(other.status).toBe(400);
    expect(((await other.json()) as { reason: string }).reason).toBe('IdempotentParameterMismatchException');
  });

  it('invokes by bare id with accountId, mints a session id for raw callers and forwards allow-listed headers only', async () => {
    const ready = await createReady(rt.control, 'raw_caller', 'counter', {
      requestHeaderConfiguration: { requestHeaderAllowlist: ['X-Tenant'] },
    });
    const res = await fetch(
      `${rt.server.url}/runtimes/${ready.agentRuntimeId}/invocations?accountId=123456789012`,
      {
        method: 'POST',
        body: '{}',
        headers: {
          'content-type': 'application/json',
          'x-tenant': 'acme',
          'x-secret': 'nope',
          'x-cloud-trace-id': 'Root=1-abc',
        },
      },
    );
    expect(res.status).toBe(200);
    const minted = res.headers.get('x-amzn-bedrock-agentcore-runtime-session-id');
    expect(minted).toMatch(/^[0-9a-f-]{36}$/);
    const body = (await res.json()) as { headers: Record<string, string> };
    expect(body.headers['x-tenant']).toBe('acme');
    expect(body.headers['x-secret']).toBeUndefined();
    // An unreadable trace header starts a new trace at the runtime, which the worker continues.
    expect(body.headers['x-cloud-trace-id']).toMatch(
      /^Root=1-[0-9a-f]{8}-[0-9a-f]{24};Parent=[0-9a-f]{16};Sampled=1$/,
    );
    expect(body.headers['x-amzn-bedrock-agentcore-runtime-session-id']).toBe(minted);
    // Our X-Cloud session header name reaches the same session as the AWS one.
    const cloud = await fetch(`${rt.server.url}/runtimes/${ready.agentRuntimeId}/invocations`, {
      method: 'POST',
      body: '{}',
      headers: { 'x-cloud-agent-runtime-session-id': minted! },
    });
    expect(((await cloud.json()) as { count: number }).count).toBe(2);
    const wrongAccount = await fetch(
      `${rt.server.url}/runtimes/${ready.agentRuntimeId}/invocations?accountId=999999999999`,
      { method: 'POST', body: '{}' },
    );
    await expectAwsError(wrongAccount, 404, 'ResourceNotFoundException', '999999999999');
  });
});

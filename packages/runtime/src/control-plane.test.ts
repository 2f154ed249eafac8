import {
  ConflictException,
  CreateAgentRuntimeCommand,
  CreateAgentRuntimeEndpointCommand,
  DeleteAgentRuntimeCommand,
  DeleteAgentRuntimeEndpointCommand,
  GetAgentRuntimeCommand,
  GetAgentRuntimeEndpointCommand,
  ListAgentRuntimeEndpointsCommand,
  ListAgentRuntimeVersionsCommand,
  ListTagsForResourceCommand,
  ResourceNotFoundException,
  TagResourceCommand,
  UntagResourceCommand,
  UpdateAgentRuntimeCommand,
  UpdateAgentRuntimeEndpointCommand,
  ValidationException,
  paginateListAgentRuntimes,
} from '@aws-sdk/client-bedrock-agentcore-control';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ROLE_ARN,
  type TestRuntime,
  createReady,
  fixtureUri,
  invokeJson,
  pollStatus,
  sessionId,
  startRuntime,
  waitFor,
} from './test-support.js';
import { createSqliteStore } from './control/store/sqlite-store.js';

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
const artifact = (fixture: string) => ({ containerConfiguration: { containerUri: fixtureUri(fixture) } });

describe('control plane through BedrockAgentCoreControlClient', () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime();
  });
  afterAll(async () => {
    await rt?.close();
  }, 30_000);

  it('creates a runtime that moves CREATING → READY with documented ARNs, timestamps and lifecycle defaults', async () => {
    const created = await rt.control.send(
      new CreateAgentRuntimeCommand({
        agentRuntimeName: 'lifecycle_defaults',
        agentRuntimeArtifact: artifact('counter'),
        roleArn: ROLE_ARN,
        networkConfiguration: { networkMode: 'PUBLIC' },
        description: 'a counter',
      }),
    );
    expect(created.status).toBe('CREATING');
    expect(created.agentRuntimeVersion).toBe('1');
    expect(created.agentRuntimeId).toMatch(/^lifecycle_defaults-[a-zA-Z0-9]{10}$/);
    expect(created.agentRuntimeArn).toBe(
      `arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/${created.agentRuntimeId}`,
    );
    expect(created.createdAt).toBeInstanceOf(Date);
    const got = await pollStatus(rt.control, created.agentRuntimeId!);
    expect(got.status).toBe('READY');
    expect(got.lifecycleConfiguration).toEqual({ idleRuntimeSessionTimeout: 900, maxLifetime: 28_800 });
    expect(got.networkConfiguration).toEqual({ networkMode: 'PUBLIC' });
    expect(got.description).toBe('a counter');
    expect(got.workloadIdentityDetails?.workloadIdentityArn).toContain(
      `workload-identity/${created.agentRuntimeId}`,
    );
    expect(got.lastUpdatedAt!.getTime()).toBeGreaterThanOrEqual(got.createdAt!.getTime());
    const raw = await fetch(`${rt.server.url}/runtimes/${created.agentRuntimeId}/`);
    const json = (await raw.json()) as Record<string, string>;
    expect(json.createdAt).toMatch(RFC3339);
    expect(json.lastUpdatedAt).toMatch(RFC3339);
  });

  it('lists with pagination, keeps versions, endpoints (DEFAULT follows latest) and tags', async () => {
    const a = await createReady(rt.control, 'paged_a', 'counter');
    await createReady(rt.control, 'paged_b', 'counter');
    const names: string[] = [];
    let pages = 0;
    for await (const page of paginateListAgentRuntimes({ client: rt.control, pageSize: 1 }, {})) {
      pages++;
      names.push(...page.agentRuntimes!.map((r) => r.agentRuntimeName!));
    }
    expect(names).toEqual(expect.arrayContaining(['paged_a', 'paged_b']));
    expect(pages).toBe(names.length);

    const id = a.agentRuntimeId!;
    const update = () =>
      rt.control.send(
        new UpdateAgentRuntimeCommand({
          agentRuntimeId: id,
          agentRuntimeArtifact: artifact('counter'),
          roleArn: ROLE_ARN,
          networkConfiguration: { networkMode: 'PUBLIC' },
          description: 'v2',
        }),
      );
    const pinned = await rt.control.send(
      new CreateAgentRuntimeEndpointCommand({ agentRuntimeId: id, name: 'stable', tags: { team: 'core' } }),
    );
    expect(pinned.targetVersion).toBe('1');
    expect((await update()).agentRuntimeVersion).toBe('2');
    await pollStatus(rt.control, id);
    const versions = await rt.control.send(new ListAgentRuntimeVersionsCommand({ agentRuntimeId: id }));
    expect(versions.agentRuntimes!.map((v) => v.agentRuntimeVersion)).toEqual(['1', '2']);
    expect(
      (await rt.control.send(new GetAgentRuntimeCommand({ agentRuntimeId: id, agentRuntimeVersion: '1' })))
        .description,
    ).toBeUndefined();
    expect((await rt.control.send(new GetAgentRuntimeCommand({ agentRuntimeId: id }))).description).toBe(
      'v2',
    );

    const def = await rt.control.send(
      new GetAgentRuntimeEndpointCommand({ agentRuntimeId: id, endpointName: 'DEFAULT' }),
    );
    expect(def.liveVersion).toBe('2');
    expect(def.name).toBe('DEFAULT');
    const stable = await rt.control.send(
      new GetAgentRuntimeEndpointCommand({ agentRuntimeId: id, endpointName: 'stable' }),
    );
    expect(stable.liveVersion).toBe('1');
    expect(stable.agentRuntimeEndpointArn).toBe(`${a.agentRuntimeArn}/runtime-endpoint/stable`);
    const list = await rt.control.send(new ListAgentRuntimeEndpointsCommand({ agentRuntimeId: id }));
    expect(list.runtimeEndpoints!.map((e) => e.name)).toEqual(['DEFAULT', 'stable']);
    // The qualifier routes the invoke to the endpoint's version.
    const onStable = await invokeJson(
      rt.data,
      a.agentRuntimeArn!,
      sessionId('qualified'),
      {},
      { qualifier: 'stable' },
    );
    expect(onStable.count).toBe(1);
    expect(rt.server.sessions().find((s) => s.sessionId === sessionId('qualified'))!.version).toBe(1);
    const moved = await rt.control.send(
      new UpdateAgentRuntimeEndpointCommand({
        agentRuntimeId: id,
        endpointName: 'stable',
        agentRuntimeVersion: '2',
      }),
    );
    expect(moved.liveVersion).toBe('2');

    const tags = await rt.control.send(
      new ListTagsForResourceCommand({ resourceArn: stable.agentRuntimeEndpointArn! }),
    );
    expect(tags.tags).toEqual({ team: 'core' });
    await rt.control.send(
      new TagResourceCommand({ resourceArn: a.agentRuntimeArn!, tags: { env: 'dev', 'cost center': 'a/b' } }),
    );
    await rt.control.send(new UntagResourceCommand({ resourceArn: a.agentRuntimeArn!, tagKeys: ['env'] }));
    expect(
      (await rt.control.send(new ListTagsForResourceCommand({ resourceArn: a.agentRuntimeArn! }))).tags,
    ).toEqual({ 'cost center': 'a/b' });

    await rt.control.send(
      new DeleteAgentRuntimeEndpointCommand({ agentRuntimeId: id, endpointName: 'stable' }),
    );
    await expect(
      rt.control.send(new GetAgentRuntimeEndpointCommand({ agentRuntimeId: id, endpointName: 'stable' })),
    ).rejects.toBeInstanceOf(ResourceNotFoundException);
    const deleted = await rt.control.send(new DeleteAgentRuntimeCommand({ agentRuntimeId: id }));
    expect(deleted.status).toBe('DELETING');
    // DELETING until its sessions are stopped, then gone.
    let gone: unknown;
    await waitFor(
      async () => {
        gone = await rt.control.send(new GetAgentRuntimeCommand({ agentRuntimeId: id })).then(
          (r) => (expect(r.status).toBe('DELETING'), undefined),
          (e: unknown) => e,
        );
        return gone !== undefined;
      },
      15_000,
      'runtime deleted',
    );
    expect(gone).toBeInstanceOf(ResourceNotFoundException);
    expect(rt.server.sessions().some((s) => s.runtimeId === id)).toBe(false);
  });

  it('refuses a duplicate name with ConflictException', async () => {
    await createReady(rt.control, 'dupe', 'counter');
    await expect(createReady(rt.control, 'dupe', 'counter')).rejects.toBeInstanceOf(ConflictException);
  });

  it('fails a registry image it cannot get with a clear CREATE_FAILED reason (no engine, or the pull failed)', async () => {
    const got = await rt.control.send(
      new CreateAgentRuntimeCommand({
        agentRuntimeName: 'image_agent',
        agentRuntimeArtifact: {
          containerConfiguration: {
            containerUri: '123456789012.dkr.ecr.us-east-1.amazonaws.com/agent:latest',
          },
        },
        roleArn: ROLE_ARN,
        networkConfiguration: { networkMode: 'PUBLIC' },
      }),
    );
    const settled = await pollStatus(rt.control, got.agentRuntimeId!);
    expect(settled.status).toBe('CREATE_FAILED');
    // No container engine here: it says so; with podman or Docker: the engine's own words on the pull.
    expect(settled.failureReason).toMatch(
      /123456789012\.dkr\.ecr\.us-east-1\.amazonaws\.com\/agent:latest.*(needs a container engine|pull: )/,
    );
    const missing = await createReady(rt.control, 'missing_dir', 'no-such-fixture');
    expect(missing.status).toBe('CREATE_FAILED');
    expect(missing.failureReason).toContain('is not a directory');
  });

  it('answers validation errors as ValidationException naming the field', async () => {
    const base = {
      agentRuntimeArtifact: artifact('counter'),
      roleArn: ROLE_ARN,
      networkConfiguration: { networkMode: 'PUBLIC' as const },
    };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, agentRuntimeName: 'has-hyphen' }, 'agentRuntimeName'],
      [{ ...base, agentRuntimeName: 'x'.repeat(49) }, 'agentRuntimeName'],
      [{ ...base, agentRuntimeName: 'bad_role', roleArn: 'arn:aws:iam::123:user/x' }, 'roleArn'],
      [
        { ...base, agentRuntimeName: 'bad_net', networkConfiguration: { networkMode: 'PRIVATE' } },
        'networkConfiguration.networkMode',
      ],
      [
        {
          ...base,
          agentRuntimeName: 'bad_idle',
          lifecycleConfiguration: { idleRuntimeSessionTimeout: 100, maxLifetime: 50 },
        },
        'lifecycleConfiguration.idleRuntimeSessionTimeout',
      ],
      [
        { ...base, agentRuntimeName: 'bad_max', lifecycleConfiguration: { maxLifetime: 99_999 } },
        'lifecycleConfiguration.maxLifetime',
      ],
      [
        {
          ...base,
          agentRuntimeName: 'bad_hdr',
          requestHeaderConfiguration: { requestHeaderAllowlist: ['Content-Type'] },
        },
        'requestHeaderConfiguration.requestHeaderAllowlist[0]',
      ],
      [
        {
          ...base,
          agentRuntimeName: 'bad_jwt',
          authorizerConfiguration: { customJWTAuthorizer: { discoveryUrl: 'https://idp/keys' } },
        },
        'authorizerConfiguration.customJWTAuthorizer.discoveryUrl',
      ],
      [{ ...base, agentRuntimeName: 'bad_tag', tags: { 'bad*key': 'v' } }, 'tags.bad*key'],
    ];
    for (const [input, field] of cases) {
      const error = await rt.control
        .send(new CreateAgentRuntimeCommand(input as never))
        .catch((e: unknown) => e);
      expect(error, field).toBeInstanceOf(ValidationException);
      expect((error as ValidationException).fieldList?.[0]?.name).toBe(field);
      expect((error as ValidationException).reason).toBe('FieldValidationFailed');
      expect((error as Error).message).toContain(field);
      expect((error as ValidationException).$metadata.httpStatusCode).toBe(400);
    }
    const ready = await createReady(rt.control, 'short_session', 'counter');
    const short = await invokeJson(rt.data, ready.agentRuntimeArn!, 'too-short', {}).catch((e: unknown) => e);
    expect((short as Error).name).toBe('ValidationException');
    expect((short as Error).message).toContain('runtimeSessionId');
  });

  it('refuses a filesystem mountPath that is not exactly one directory under /mnt', async () => {
    const create = (name: string, mountPath: string) =>
      rt.control.send(
        new CreateAgentRuntimeCommand({
          agentRuntimeName: name,
          agentRuntimeArtifact: artifact('counter'),
          roleArn: ROLE_ARN,
          networkConfiguration: { networkMode: 'PUBLIC' },
          filesystemConfigurations: [{ sessionStorage: { mountPath } }],
        }),
      );
    const hostile = [
      '/mnt/..',
      '/mnt/../',
      '/mnt/.',
      '/mnt/../etc',
      '/mnt/./x',
      '/mnt//x',
      '/mnt/',
      '/mnt',
      '/mntx',
      'mnt/x',
      '/mnt/x/y',
      '/mnt/x\0',
      `/mnt/${'a'.repeat(300)}`,
    ];
    for (const [i, mountPath] of hostile.entries()) {
      const error = await create(`bad_mount_${i}`, mountPath).catch((e: unknown) => e);
      expect(error, mountPath).toBeInstanceOf(ValidationException);
      expect((error as ValidationException).fieldList?.[0]?.name, mountPath).toBe(
        'filesystemConfigurations[0].sessionStorage.mountPath',
      );
    }
    for (const [i, mountPath] of ['/mnt/workspace', '/mnt/data/', '/mnt/.cache'].entries()) {
      const ok = await create(`good_mount_${i}`, mountPath);
      expect((await pollStatus(rt.control, ok.agentRuntimeId!)).status, mountPath).toBe('READY');
    }
  });
});

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

describe('persistence', () => {
  it('keeps runtimes, versions and tags across a restart (node:sqlite)', async () => {
    const first = await startRuntime();
    const ready = await createReady(first.control, 'durable', 'counter', { tags: { keep: 'me' } });
    await first.server.close();
    const second = await startRuntime({}, first.dataDir);
    try {
      const got = await second.control.send(
        new GetAgentRuntimeCommand({ agentRuntimeId: ready.agentRuntimeId! }),
      );
      expect(got.status).toBe('READY');
      expect(got.agentRuntimeArn).toBe(ready.agentRuntimeArn);
      expect(
        (await second.control.send(new ListTagsForResourceCommand({ resourceArn: ready.agentRuntimeArn! })))
          .tags,
      ).toEqual({ keep: 'me' });
      expect(
        (await invokeJson(second.data, ready.agentRuntimeArn!, sessionId('after-restart'), {})).count,
      ).toBe(1);
    } finally {
      await second.close();
      await first.close();
    }
  });

  it('settles a runtime a crashed process left in CREATING when it starts again', async () => {
    const first = await startRuntime();
    const ready = await createReady(first.control, 'interrupted', 'counter');
    await first.server.close();
    // What a crash between CreateAgentRuntime and its artifact check leaves behind.
    const store = createSqliteStore(first.dataDir);
    const id = ready.agentRuntimeId!;
    const runtime = store.get('runtime', id)!;
    const key = `${id}#${runtime.latestVersion}`;
    await store.put('runtime', id, { ...runtime, status: 'CREATING' }, '', Date.parse(runtime.createdAt));
    await store.put(
      'version',
      key,
      { ...store.get('version', key)!, status: 'CREATING' },
      id,
      runtime.latestVersion,
    );
    await store.close();
    const second = await startRuntime({}, first.dataDir);
    try {
      expect((await pollStatus(second.control, id)).status).toBe('READY');
      expect((await invokeJson(second.data, ready.agentRuntimeArn!, sessionId('recovered'), {})).count).toBe(
        1,
      );
    } finally {
      await second.close();
      await first.close();
    }
  });

  it('finishes a deletion a crashed process left DELETING when it starts again', async () => {
    const first = await startRuntime();
    const ready = await createReady(first.control, 'interrupted_delete', 'counter');
    await first.server.close();
    // What a crash between DeleteAgentRuntime's 202 and the end of its work leaves behind.
    const store = createSqliteStore(first.dataDir);
    const id = ready.agentRuntimeId!;
    const runtime = store.get('runtime', id)!;
    await store.put('runtime', id, { ...runtime, status: 'DELETING' }, '', Date.parse(runtime.createdAt));
    await store.close();
    const second = await startRuntime({}, first.dataDir);
    try {
      const gone = () =>
        second.control.send(new GetAgentRuntimeCommand({ agentRuntimeId: id })).then(
          () => false,
          (e: unknown) => e instanceof ResourceNotFoundException,
        );
      await waitFor(gone, 15_000, 'the interrupted deletion finished');
      await expect(
        second.control.send(new ListAgentRuntimeVersionsCommand({ agentRuntimeId: id })),
      ).rejects.toBeInstanceOf(ResourceNotFoundException);
      expect(second.logs.some((l) => String(l.msg).includes('left DELETING'))).toBe(true);
    } finally {
      await second.close();
      await first.close();
    }
  }, 30_000);

  it('refuses a foreign Host (DNS rebinding) and cross-site state-changing requests, not plain clients', async () => {
    const rt = await startRuntime({ allowedHosts: ['runtime'] });
    const send = (headers: Record<string, string>, method = 'POST') =>
      new Promise<{ status: number; type: string | undefined; body: string }>((resolve, reject) => {
        const url = new URL(`${rt.server.url}/runtimes`);
        const req = httpRequest(
          { host: url.hostname, port: url.port, path: '/runtimes/', method, headers },
          (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () =>
              resolve({
                status: res.statusCode!,
                type: res.headers['x-amzn-errortype'] as string | undefined,
                body,
              }),
            );
          },
        );
        req.on('error', reject);
        req.end(method === 'POST' ? '{}' : undefined);
      });
    try {
      const rebound = await send({ host: 'attacker.example:8787' }, 'GET');
      expect(rebound.status).toBe(403);
      expect(rebound.type).toBe('AccessDeniedException');
      expect(rebound.body).toContain('AGENTRT_RUNTIME_ALLOWED_HOSTS');
      const csrf = await send({
        host: 'localhost',
        origin: 'https://attacker.example',
        'content-type': 'text/plain',
      });
      expect(csrf.status).toBe(403);
      expect(csrf.body).toContain('cross-site');
      // By service name, and by a plain client without Origin: ListAgentRuntimes (POST /runtimes/) answers.
      for (const host of ['runtime:8787', '127.0.0.1']) {
        const ok = await send({ host, 'content-type': 'application/json' });
        expect(ok.status).toBe(200);
        expect(ok.body).toContain('agentRuntimes');
      }
      // A loopback name passes the guard and reaches the router (which knows no GET there).
      const routed = await send({ host: 'localhost:1' }, 'GET');
      expect(routed.body).toContain('method GET is not allowed');
    } finally {
      await rt.close();
    }
  });

  it('lets the pages of AGENTRT_RUNTIME_ALLOWED_ORIGINS in (CORS: preflight, headers), and no other origin', async () => {
    const page = 'http://127.0.0.1:4318';
    const rt = await startRuntime({ allowedOrigins: [page] });
    const list = (origin: string, init: RequestInit = {}) =>
      fetch(`${rt.server.url}/runtimes/`, {
        method: 'POST',
        body: '{}',
        ...init,
        headers: {
          origin,
          'sec-fetch-site': 'cross-site',
          'content-type': 'application/json',
          ...init.headers,
        },
      });
    try {
      const preflight = await fetch(`${rt.server.url}/runtimes/x/invocations`, {
        method: 'OPTIONS',
        headers: {
          origin: page,
          'access-control-request-method': 'POST',
          'access-control-request-headers':
            'content-type,x-amzn-bedrock-agentcore-runtime-session-id,traceparent',
        },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBe(page);
      expect(preflight.headers.get('access-control-allow-headers')).toContain(
        'x-amzn-bedrock-agentcore-runtime-session-id',
      );
      const allowed = await list(page);
      expect(allowed.status).toBe(200);
      expect(allowed.headers.get('access-control-allow-origin')).toBe(page);
      expect(allowed.headers.get('access-control-expose-headers')).toContain('mcp-session-id');
      const other = await list('http://127.0.0.1:9999');
      expect(other.status).toBe(403);
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
      const otherPreflight = await fetch(`${rt.server.url}/runtimes/`, {
        method: 'OPTIONS',
        headers: { origin: 'http://127.0.0.1:9999', 'access-control-request-method': 'POST' },
      });
      expect(otherPreflight.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await rt.close();
    }
  });
});

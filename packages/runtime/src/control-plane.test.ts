// The control plane through BedrockAgentCoreControlClient: runtimes, versions, endpoints and tags,
// and their validation errors. Hostile HTTP input is control-plane-http.test.ts; what survives a
// restart (and the Host and Origin guards) control-plane-persistence.test.ts.
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

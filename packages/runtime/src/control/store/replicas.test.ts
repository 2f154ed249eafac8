// Two runtime replicas on one Kubernetes control store (the test API server): what one creates,
// updates or deletes through the AWS SDK, the other serves; kubectl agrees with both.
import {
  CreateAgentRuntimeCommand,
  DeleteAgentRuntimeCommand,
  GetAgentRuntimeCommand,
  ListAgentRuntimesCommand,
  UpdateAgentRuntimeCommand,
} from '@aws-sdk/client-bedrock-agentcore-control';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeApiServer } from '../../test-support/k8s/api-server.js';
import { type TestCluster, startTestCluster } from '../../test-support/k8s/test-cluster.js';
import {
  ROLE_ARN,
  type TestRuntime,
  fixtureUri,
  invokeJson,
  pollStatus,
  sessionId,
} from '../../test-support.js';

let cluster: TestCluster;
let api: KubeApiServer;
let a: TestRuntime;
let b: TestRuntime;

const kubectl = (...args: string[]) => cluster.kubectl(...args);

beforeAll(async () => {
  cluster = await startTestCluster();
  api = cluster.api;
  // Each replica with its own data dir, on the shared control store.
  [a, b] = await Promise.all([cluster.replica('runtime-a'), cluster.replica('runtime-b')]);
}, 60_000);
afterAll(async () => {
  await cluster?.close();
});

/** Polls `check` against replica `on` until it holds (its watch delivers the other replica's writes). */
async function eventually<T>(check: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  for (let i = 0; ; i++) {
    const value = await check();
    if (ok(value) || i >= 200) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('two runtime replicas, one Kubernetes control store', () => {
  it('create on A, get, list, invoke and update on B, delete on A; kubectl agrees', async () => {
    const created = await a.control.send(
      new CreateAgentRuntimeCommand({
        agentRuntimeName: 'shared_counter',
        agentRuntimeArtifact: { containerConfiguration: { containerUri: fixtureUri('counter') } },
        roleArn: ROLE_ARN,
        networkConfiguration: { networkMode: 'PUBLIC' },
      }),
    );
    const id = created.agentRuntimeId!;
    const onB = await eventually(
      () => b.control.send(new GetAgentRuntimeCommand({ agentRuntimeId: id })).catch(() => undefined),
      (got) => got?.status === 'READY',
    );
    expect(onB?.status).toBe('READY');
    const listed = await b.control.send(new ListAgentRuntimesCommand({}));
    expect(listed.agentRuntimes?.map((r) => r.agentRuntimeId)).toEqual([id]);
    const rows = JSON.parse(await kubectl('get', 'agentruntimes', '-o', 'json')) as {
      items: { spec: { id: string; latestVersion: number }; status: { status: string } }[];
    };
    expect(rows.items.map((i) => [i.spec.id, i.status.status])).toEqual([[id, 'READY']]);

    const session = sessionId('replica-b');
    expect((await invokeJson(b.data, created.agentRuntimeArn!, session, {})).count).toBe(1);
    expect((await invokeJson(b.data, created.agentRuntimeArn!, session, {})).count).toBe(2);

    await b.control.send(
      new UpdateAgentRuntimeCommand({
        agentRuntimeId: id,
        agentRuntimeArtifact: { containerConfiguration: { containerUri: fixtureUri('echo') } },
        roleArn: ROLE_ARN,
        networkConfiguration: { networkMode: 'PUBLIC' },
      }),
    );
    expect((await pollStatus(b.control, id)).agentRuntimeVersion).toBe('2');
    const onA = await eventually(
      () => a.control.send(new GetAgentRuntimeCommand({ agentRuntimeId: id })),
      (got) => got.agentRuntimeVersion === '2' && got.status === 'READY',
    );
    expect(onA).toMatchObject({ agentRuntimeVersion: '2', status: 'READY' });
    expect(await kubectl('get', 'agentruntimeversions', '-o', 'name')).toMatch(
      /(agentruntimeversion\S+\n){2}/,
    );

    await a.control.send(new DeleteAgentRuntimeCommand({ agentRuntimeId: id }));
    const gone = await eventually(
      () => b.control.send(new ListAgentRuntimesCommand({})),
      (l) => (l.agentRuntimes ?? []).length === 0,
    );
    expect(gone.agentRuntimes).toEqual([]);
    await eventually(
      () => kubectl('get', 'agentruntimes,agentruntimeversions,agentruntimeendpoints', '-o', 'name'),
      (out) => out.trim() === '',
    );
    expect(
      (await kubectl('get', 'agentruntimes,agentruntimeversions,agentruntimeendpoints', '-o', 'name')).trim(),
    ).toBe('');
  });

  it('the same name created on both replicas at once makes one runtime and one ConflictException', async () => {
    const create = (replica: TestRuntime) =>
      replica.control.send(
        new CreateAgentRuntimeCommand({
          agentRuntimeName: 'raced',
          agentRuntimeArtifact: { containerConfiguration: { containerUri: fixtureUri('counter') } },
          roleArn: ROLE_ARN,
          networkConfiguration: { networkMode: 'PUBLIC' },
        }),
      );
    const results = await Promise.allSettled([create(a), create(b)]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((lost.reason as Error).name).toBe('ConflictException');
    const listed = await eventually(
      () => a.control.send(new ListAgentRuntimesCommand({})),
      (l) => (l.agentRuntimes ?? []).length === 1,
    );
    expect(listed.agentRuntimes).toHaveLength(1);
    expect(JSON.parse(await kubectl('get', 'agentruntimes', '-o', 'json')).items).toHaveLength(1);
  });

  it('one replica holds the leader Lease', async () => {
    const holder = await eventually(
      async () =>
        (
          JSON.parse(await kubectl('get', 'lease', 'agentrt-leader', '-o', 'json').catch(() => '{}')) as {
            spec?: { holderIdentity?: string };
          }
        ).spec?.holderIdentity,
      (h) => h === 'runtime-a' || h === 'runtime-b',
    );
    expect(['runtime-a', 'runtime-b']).toContain(holder);
  });

  it('answers 503 ServiceException with Retry-After while the API server is unreachable, and loses nothing', async () => {
    const before = (await a.control.send(new ListAgentRuntimesCommand({}))).agentRuntimes ?? [];
    await api.suspend();
    let refused: unknown;
    try {
      refused = await a.control
        .send(
          new CreateAgentRuntimeCommand({
            agentRuntimeName: 'during_outage',
            agentRuntimeArtifact: { containerConfiguration: { containerUri: fixtureUri('counter') } },
            roleArn: ROLE_ARN,
            networkConfiguration: { networkMode: 'PUBLIC' },
          }),
        )
        .catch((e: unknown) => e);
      // Reads keep answering from the replica's cache.
      expect((await b.control.send(new ListAgentRuntimesCommand({}))).agentRuntimes).toEqual(before);
    } finally {
      await api.resume();
    }
    const e = refused as {
      name: string;
      message: string;
      $metadata: { httpStatusCode: number };
      $response?: unknown;
    };
    expect(e.name).toBe('ServiceException');
    expect(e.$metadata.httpStatusCode).toBe(503);
    expect(e.message).toMatch(/Kubernetes API server did not take runtime during_outage-.*; retry/);
    const created = await a.control.send(
      new CreateAgentRuntimeCommand({
        agentRuntimeName: 'during_outage',
        agentRuntimeArtifact: { containerConfiguration: { containerUri: fixtureUri('counter') } },
        roleArn: ROLE_ARN,
        networkConfiguration: { networkMode: 'PUBLIC' },
      }),
    );
    const seen = await eventually(
      () =>
        b.control
          .send(new GetAgentRuntimeCommand({ agentRuntimeId: created.agentRuntimeId! }))
          .catch(() => undefined),
      (got) => got?.status === 'READY',
    );
    expect(seen?.status).toBe('READY');
  });
});

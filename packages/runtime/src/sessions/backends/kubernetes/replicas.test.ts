// The data plane is the router: two runtime replicas on one test API server and test kubelet, each
// reaching every session's pod through its own informer cache. A session started on A answers on
// B from the same pod (the same session memory), even with the API server down; it is stopped on
// either; a pod still starting holds the invocation (503 with Retry-After past the budget); a pod
// whose address refuses connections for a moment is dialled again; kubectl agrees throughout.
import { StopRuntimeSessionCommand } from '@aws-sdk/client-bedrock-agentcore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntimeClient } from '../../../client.js';
import { type TestCluster, startTestCluster, until } from '../../../test-support/k8s/test-cluster.js';
import {
  type TestRuntime,
  createReady,
  invokeJson,
  runCommand,
  sdkClients,
  sessionId,
} from '../../../test-support.js';
import { sessionSelector } from './pod-spec.js';

let cluster: TestCluster;
let a: TestRuntime;
let b: TestRuntime;
let counterArn: string;
let counterId: string;

beforeAll(async () => {
  cluster = await startTestCluster({ kubelet: true });
  a = await cluster.replica('runtime-a');
  b = await cluster.replica('runtime-b');
  const counter = await createReady(a.control, 'routed', 'counter');
  counterArn = counter.agentRuntimeArn!;
  counterId = counter.agentRuntimeId!;
}, 60_000);
afterAll(async () => {
  await cluster?.close();
});

interface PodRow {
  metadata: { name: string; annotations: Record<string, string> };
}
const podsOf = async (runtimeId: string, sid: string) =>
  (
    JSON.parse(await cluster.kubectl('get', 'pods', '-l', sessionSelector(runtimeId, sid), '-o', 'json')) as {
      items: PodRow[];
    }
  ).items;
const active = async (replica: TestRuntime) =>
  (await createRuntimeClient({ url: replica.server.url }).activeSessions()).map((s) => s.sessionId).sort();

const stop = (replica: TestRuntime, sid: string) =>
  replica.data.send(new StopRuntimeSessionCommand({ agentRuntimeArn: counterArn, runtimeSessionId: sid }));

/** After a stop on either replica: no pod is left, and neither replica lists the session. */
async function expectGone(sid: string, ...replicas: TestRuntime[]): Promise<void> {
  expect(
    await until(
      () => podsOf(counterId, sid),
      (p) => p.length === 0,
    ),
  ).toHaveLength(0);
  for (const replica of replicas)
    expect(
      await until(
        () => active(replica),
        (l) => !l.includes(sid),
      ),
    ).not.toContain(sid);
}

describe('a session started on one replica', () => {
  it('is invoked on the other from the same pod, even with the API server down, and stopped on the first', async () => {
    const sid = sessionId('routed-a-to-b');
    const once = sdkClients(b.server.url, 'us-east-1', 'AKIDLOCAL', 1);
    const first = await invokeJson(a.data, counterArn, sid, {});
    expect(first.count).toBe(1);
    const [pod] = await podsOf(counterId, sid);
    expect(pod?.metadata.annotations['agentrt.dev/session-id']).toBe(sid);
    const onA = a.server.sessions().find((s) => s.sessionId === sid);
    expect(onA?.worker?.podName).toBe(pod!.metadata.name);

    // B reads the pod from its informer: the API server is not asked (it is down for each try; a
    // try before B's watch delivered the pod would find none and fail to make one: 503).
    let second: Record<string, unknown> | undefined;
    for (let tries = 0; !second && tries < 20; tries++) {
      await cluster.api.suspend();
      try {
        second = await invokeJson(once.data, counterArn, sid, {}).catch(() => undefined);
      } finally {
        await cluster.api.resume();
      }
      if (!second) await new Promise((r) => setTimeout(r, 250));
    }
    if (!second) throw new Error('B never served the session with the API server down');
    expect(second.count).toBe(2); // the same worker's memory
    expect(second.pid).toBe(first.pid);
    expect(b.server.sessions().find((s) => s.sessionId === sid)?.worker?.podName).toBe(pod!.metadata.name);

    // A command on B runs in the same pod (pods/exec through B).
    const ran = await runCommand(b.data, counterArn, sid, 'cat "$TMPDIR/counter.txt"');
    expect(ran.stdout.trim()).toBe('2');
    expect(ran.stop?.exitCode).toBe(0);

    // kubectl agrees with both replicas' active-session lists.
    expect(await podsOf(counterId, sid)).toHaveLength(1);
    expect(await active(a)).toContain(sid);
    expect(await active(b)).toContain(sid);

    // Stopped on A: the pod goes, and B, which follows the pod, drops the session too.
    await stop(a, sid);
    await expectGone(sid, a, b);
    // A new invocation on B starts a new session, in a new pod.
    expect((await invokeJson(b.data, counterArn, sid, {})).count).toBe(1);
    await stop(b, sid);
    once.data.destroy();
    once.control.destroy();
  });

  it('is stopped on the other, which the first follows', async () => {
    const sid = sessionId('routed-stop-on-b');
    expect((await invokeJson(a.data, counterArn, sid, {})).count).toBe(1);
    expect((await invokeJson(b.data, counterArn, sid, {})).count).toBe(2);
    await stop(b, sid);
    await expectGone(sid, a, b);
  });
});

describe('an invocation while its pod starts', () => {
  it('is held up to the budget, then answered 503 with Retry-After; the pod goes on starting and the next call is held until it serves', async () => {
    // C holds an invocation 1.5 s for a starting pod, B 30 s (the default).
    const c = await cluster.replica('runtime-c', { kubernetesHoldMs: 1500 });
    const slow = await createReady(c.control, 'slow_boot', 'counter', {
      environmentVariables: { START_DELAY_MS: '5000' },
    });
    const sid = sessionId('held-start');
    const once = sdkClients(c.server.url, 'us-east-1', 'AKIDLOCAL', 1);
    const t0 = Date.now();
    const refused = (await invokeJson(once.data, slow.agentRuntimeArn!, sid, {}).catch(
      (e: unknown) => e,
    )) as {
      name: string;
      message: string;
      $metadata: { httpStatusCode: number };
      $response?: { headers: Record<string, string> };
    };
    const heldMs = Date.now() - t0;
    expect(refused.name).toBe('ServiceException');
    expect(refused.$metadata.httpStatusCode).toBe(503);
    expect(refused.$response?.headers['retry-after']).toBe('1');
    expect(refused.message).toMatch(
      /is still starting \(pod agentrt-s-[0-9a-f]+ not Ready after 1500 ms\); retry/,
    );
    expect(heldMs).toBeGreaterThanOrEqual(1400);
    expect(heldMs).toBeLessThan(4500); // not the 5 s boot: it was let go at the budget
    expect(await podsOf(slow.agentRuntimeId!, sid)).toHaveLength(1); // still starting, not deleted

    // B holds its caller (budget 30 s) until the pod is Ready: the 503'd call never reached the worker.
    const held = await invokeJson(b.data, slow.agentRuntimeArn!, sid, {});
    expect(held.count).toBe(1);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(4500);
    // C's own start went on in the background: the session is ready there too, on the same pod.
    expect((await invokeJson(once.data, slow.agentRuntimeArn!, sid, {})).count).toBe(2);
    expect(await podsOf(slow.agentRuntimeId!, sid)).toHaveLength(1);
    once.data.destroy();
    once.control.destroy();
  });
});

describe('a pod whose address does not answer for a moment', () => {
  const once = () => sdkClients(a.server.url, 'us-east-1', 'AKIDLOCAL', 1).data;

  it('is dialled again while nothing was sent, and the invocation arrives once', async () => {
    const sid = sessionId('redial');
    expect((await invokeJson(a.data, counterArn, sid, {})).count).toBe(1);
    const [pod] = await podsOf(counterId, sid);
    cluster.kubelet!.cut(pod!.metadata.name, 500, 'refuse');
    const t0 = Date.now();
    expect((await invokeJson(once(), counterArn, sid, {})).count).toBe(2);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(400); // it waited for the address, not failed
    await stop(a, sid);
  });

  it('answers 424 once the tries are spent, and never sends again once a connection was made', async () => {
    const sid = sessionId('no-resend');
    expect((await invokeJson(a.data, counterArn, sid, {})).count).toBe(1);
    const [pod] = await podsOf(counterId, sid);
    const status = (e: unknown) => (e as { $metadata: { httpStatusCode: number } }).$metadata.httpStatusCode;

    cluster.kubelet!.cut(pod!.metadata.name, 3000, 'refuse');
    const t0 = Date.now();
    const refused = await invokeJson(once(), counterArn, sid, {}).catch((e: unknown) => e);
    expect(status(refused)).toBe(424);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1400); // 200 + 400 + 800 ms between the tries
    await new Promise((r) => setTimeout(r, 3000 - (Date.now() - t0) + 200));

    const reset = cluster.kubelet!.cut(pod!.metadata.name, 1500, 'reset');
    const dropped = await invokeJson(once(), counterArn, sid, {}).catch((e: unknown) => e);
    expect(status(dropped)).toBe(424);
    expect(reset.taken).toBe(1); // the request went out once: not sent again
    await new Promise((r) => setTimeout(r, 1700));
    expect((await invokeJson(a.data, counterArn, sid, {})).count).toBe(2);
    await stop(a, sid);
  });
});

describe('idle timeout and max lifetime, on the Lease holder only', () => {
  const leaderName = async () =>
    (
      JSON.parse(await cluster.kubectl('get', 'lease', 'agentrt-leader', '-o', 'json')) as {
        spec: { holderIdentity: string };
      }
    ).spec.holderIdentity;
  const stoppedBy = (replica: TestRuntime, sid: string, reason: string) =>
    replica.logs.some((l) => l.msg === 'session stopped' && l.sessionId === sid && l.reason === reason);

  it("count every replica's invocations: a session started on A and kept busy on B outlives its idle timeout, then the leader stops it", async () => {
    const lifecycleConfiguration = { idleRuntimeSessionTimeout: 2, maxLifetime: 60 };
    const idler = await createReady(a.control, 'idle_shared', 'counter', { lifecycleConfiguration });
    const sid = sessionId('idle-shared');
    expect((await invokeJson(a.data, idler.agentRuntimeArn!, sid, {})).count).toBe(1);
    // Four seconds (twice the idle timeout) of invocations on B only, 0.5 s apart: A sees none.
    let count = 1;
    let calls = 1;
    let lastSentAt = Date.now();
    for (const end = Date.now() + 4000; Date.now() < end; await new Promise((r) => setTimeout(r, 500))) {
      lastSentAt = Date.now();
      count = (await invokeJson(b.data, idler.agentRuntimeArn!, sid, {})).count as number;
      calls++;
    }
    expect(count).toBe(calls); // one worker's memory all along: never stopped for idleness
    const [pod] = await podsOf(idler.agentRuntimeId!, sid);
    expect(Number(pod?.metadata.annotations['agentrt.dev/last-activity-ms'])).toBeGreaterThan(
      Date.now() - 2000,
    );
    // Left alone, it is stopped by the leader alone, about 2.2 s after its last invocation: counted
    // from when that one was sent (the runtime's idle clock starts no earlier), not from now, which
    // on a loaded machine is late by the sleep and the kubectl read above.
    await until(
      () => podsOf(idler.agentRuntimeId!, sid),
      (p) => p.length === 0,
      15_000,
    );
    const stoppedAfterMs = Date.now() - lastSentAt;
    expect(await podsOf(idler.agentRuntimeId!, sid)).toHaveLength(0);
    expect(stoppedAfterMs).toBeGreaterThanOrEqual(1800);
    const leader = (await leaderName()) === 'runtime-a' ? a : b;
    const other = leader === a ? b : a;
    expect(stoppedBy(leader, sid, 'idle')).toBe(true);
    expect(stoppedBy(other, sid, 'idle')).toBe(false);
    await expectGone(sid, a, b);
  });

  it('stop a session at its max lifetime, busy or not, wherever it started', async () => {
    const busy = await createReady(b.control, 'short_shared', 'busy', {
      lifecycleConfiguration: { idleRuntimeSessionTimeout: 2, maxLifetime: 2 },
    });
    const sid = sessionId('lifetime-shared');
    await invokeJson(b.data, busy.agentRuntimeArn!, sid, {});
    await until(
      () => podsOf(busy.agentRuntimeId!, sid),
      (p) => p.length === 0,
      15_000,
    );
    expect(await podsOf(busy.agentRuntimeId!, sid)).toHaveLength(0);
    const leader = (await leaderName()) === 'runtime-a' ? a : b;
    expect(stoppedBy(leader, sid, 'max-lifetime')).toBe(true);
    expect(stoppedBy(leader === a ? b : a, sid, 'max-lifetime')).toBe(false);
  });
});

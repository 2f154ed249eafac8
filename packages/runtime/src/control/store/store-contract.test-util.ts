// The one contract every control store keeps (SQLite and Kubernetes run the same cases).
import { afterEach, describe, expect, it } from 'vitest';
import {
  type EndpointRecord,
  type OnlineEvaluationRecord,
  type RuntimeRecord,
  type Store,
  type VersionRecord,
} from '../store.js';

export interface StoreHarness {
  /** A store on a fresh, empty backing. */
  open(): Promise<Store>;
  /** A second store on the backing of the last `open()`: a restarted process, or another replica. */
  reopen(): Promise<Store>;
  /** Waits until `check` holds on a store that learns others' writes later (a watch), or fails. */
  eventually(check: () => void): Promise<void>;
}

const AT = '2026-11-26T20:00:00.000Z';

export function runtimeRecord(name: string, suffix = 'a1B2c3D4e5'): RuntimeRecord {
  const id = `${name}-${suffix}`;
  return {
    id,
    name,
    arn: `arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/${id}`,
    latestVersion: 1,
    status: 'CREATING',
    createdAt: AT,
    lastUpdatedAt: AT,
    workloadIdentityArn: `arn:aws:bedrock-agentcore:us-east-1:123456789012:workload-identity/${id}`,
  };
}

export function versionRecord(runtimeId: string, version: number): VersionRecord {
  return {
    runtimeId,
    version,
    status: 'READY',
    createdAt: AT,
    config: {
      agentRuntimeArtifact: { containerConfiguration: { containerUri: 'registry.example.com/agents/a:1' } },
      roleArn: 'arn:aws:iam::123456789012:role/AgentRuntimeRole',
      networkConfiguration: { networkMode: 'PUBLIC' },
      lifecycleConfiguration: { idleRuntimeSessionTimeout: 900, maxLifetime: 28800 },
      environmentVariables: { MULTI_LINE: 'a\nb', QUOTES: `"'\`$(x)` },
    },
  };
}

export function onlineEvaluationRecord(name: string, suffix = 'r1B2c3D4e5'): OnlineEvaluationRecord {
  const id = `${name}-${suffix}`;
  return {
    id,
    name,
    arn: `arn:aws:bedrock-agentcore:us-east-1:123456789012:online-evaluation-config/${id}`,
    samplingPercentage: 12.5,
    filters: [{ key: 'gen_ai.agent.name', operator: 'Equals', value: { stringValue: 'weather "v2"' } }],
    sessionTimeoutMinutes: 15,
    serviceNames: ['weather'],
    evaluatorIds: ['Builtin.Helpfulness', 'Builtin.TrajectoryAnyOrderMatch'],
    executionStatus: 'ENABLED',
    createdAt: AT,
    updatedAt: AT,
  };
}

function endpointRecord(runtime: RuntimeRecord, name: string, version: number): EndpointRecord {
  return {
    runtimeId: runtime.id,
    name,
    id: `${name}-${runtime.id.slice(-10)}`,
    arn: `${runtime.arn}/runtime-endpoint/${name}`,
    liveVersion: version,
    targetVersion: version,
    status: 'READY',
    createdAt: AT,
    lastUpdatedAt: AT,
  };
}

/** Puts a runtime with its versions and DEFAULT endpoint, as CreateAgentRuntime and updates do. */
async function seed(store: Store, runtime: RuntimeRecord, versions: number) {
  await store.put(
    'runtime',
    runtime.id,
    { ...runtime, latestVersion: versions },
    '',
    Date.parse(runtime.createdAt),
  );
  for (let v = 1; v <= versions; v++)
    await store.put('version', `${runtime.id}#${v}`, versionRecord(runtime.id, v), runtime.id, v);
  await store.put(
    'endpoint',
    `${runtime.id}#DEFAULT`,
    endpointRecord(runtime, 'DEFAULT', versions),
    runtime.id,
    1,
  );
  await store.put('tags', runtime.arn, { team: 'a' }, runtime.id);
}

export function describeStoreContract(name: string, harness: StoreHarness): void {
  describe(`control store contract: ${name}`, () => {
    const open: Store[] = [];
    const track = async (store: Promise<Store>) => {
      const s = await store;
      open.push(s);
      return s;
    };
    afterEach(async () => {
      await Promise.all(open.splice(0).map((s) => s.close()));
    });

    it('gets what it put, for every kind, and nothing for an id it never put', async () => {
      const store = await track(harness.open());
      const runtime = runtimeRecord('alpha');
      await seed(store, runtime, 1);
      await store.put('idempotency', 'create:token-0123456789abcdef0123456789abcdef', {
        fingerprint: '{"a":1}',
        response: { agentRuntimeId: runtime.id },
      });
      expect(store.get('runtime', runtime.id)).toEqual({ ...runtime, latestVersion: 1 });
      expect(store.get('version', `${runtime.id}#1`)).toEqual(versionRecord(runtime.id, 1));
      expect(store.get('endpoint', `${runtime.id}#DEFAULT`)).toMatchObject({
        name: 'DEFAULT',
        liveVersion: 1,
      });
      expect(store.get('tags', runtime.arn)).toEqual({ team: 'a' });
      expect(store.get('idempotency', 'create:token-0123456789abcdef0123456789abcdef')).toEqual({
        fingerprint: '{"a":1}',
        response: { agentRuntimeId: runtime.id },
      });
      expect(store.get('runtime', 'nobody-0000000000')).toBeUndefined();
      expect(store.get('version', `${runtime.id}#2`)).toBeUndefined();
    });

    it('replaces a record put again, keeps fields it does not know, and ignores later mutation of what was put', async () => {
      const store = await track(harness.open());
      const runtime = runtimeRecord('beta');
      await store.put('runtime', runtime.id, runtime, '', 1);
      const grown = { ...runtime, status: 'READY' as const, newField: { nested: [1, 'two'] } };
      await store.put('runtime', runtime.id, grown, '', 1);
      grown.newField.nested.push(3);
      expect(store.get('runtime', runtime.id)).toEqual({
        ...runtime,
        status: 'READY',
        newField: { nested: [1, 'two'] },
      });
      const failed = { ...runtime, status: 'CREATE_FAILED' as const, failureReason: 'no such image' };
      await store.put('runtime', runtime.id, failed, '', 1);
      expect(store.get('runtime', runtime.id)).toMatchObject({
        status: 'CREATE_FAILED',
        failureReason: 'no such image',
      });
      await store.put('runtime', runtime.id, { ...runtime, status: 'READY' }, '', 1);
      expect(store.get('runtime', runtime.id)).not.toHaveProperty('failureReason');
      expect(store.count('runtime')).toBe(1);
    });

    it('lists by parent in order, pages with offset and limit, and counts', async () => {
      const store = await track(harness.open());
      const a = runtimeRecord('gamma', 'A000000001');
      const b = runtimeRecord('delta', 'B000000002');
      await seed(store, a, 12);
      await seed(store, b, 2);
      const versions = (offset: number, limit: number) =>
        store.list('version', { parent: a.id, offset, limit }).map((v) => v.version);
      expect(versions(0, 5)).toEqual([1, 2, 3, 4, 5]);
      expect(versions(10, 5)).toEqual([11, 12]);
      expect(versions(12, 5)).toEqual([]);
      expect(store.count('version', a.id)).toBe(12);
      expect(store.count('version', b.id)).toBe(2);
      expect(store.count('version')).toBe(14);
      expect(
        store
          .list('runtime', { offset: 0, limit: 10 })
          .map((r) => r.id)
          .sort(),
      ).toEqual([a.id, b.id].sort());
      expect(store.count('endpoint', a.id)).toBe(1);
    });

    it('deletes one record, and a runtime children without touching another runtime', async () => {
      const store = await track(harness.open());
      const a = runtimeRecord('epsilon', 'E000000001');
      const b = runtimeRecord('zeta', 'Z000000002');
      await seed(store, a, 3);
      await seed(store, b, 1);
      await store.delete('version', `${a.id}#2`);
      await store.delete('version', `${a.id}#99`); // absent: no error
      expect(store.list('version', { parent: a.id, offset: 0, limit: 10 }).map((v) => v.version)).toEqual([
        1, 3,
      ]);
      await store.deleteChildren(a.id);
      expect(store.count('version', a.id)).toBe(0);
      expect(store.count('endpoint', a.id)).toBe(0);
      expect(store.get('tags', a.arn)).toBeUndefined();
      expect(store.get('runtime', a.id)).toBeDefined();
      await store.delete('runtime', a.id);
      expect(store.get('runtime', a.id)).toBeUndefined();
      expect(store.count('version', b.id)).toBe(1);
      expect(store.get('tags', b.arn)).toEqual({ team: 'a' });
    });

    it('a store opened again on the same backing holds everything the first one wrote', async () => {
      const first = await track(harness.open());
      const runtime = runtimeRecord('eta');
      await seed(first, runtime, 2);
      await first.put('runtime', runtime.id, { ...runtime, latestVersion: 2, status: 'READY' }, '', 1);
      await first.delete('version', `${runtime.id}#1`);
      const second = await track(harness.reopen());
      await harness.eventually(() => {
        expect(second.get('runtime', runtime.id)).toMatchObject({ status: 'READY', latestVersion: 2 });
        expect(
          second.list('version', { parent: runtime.id, offset: 0, limit: 10 }).map((v) => v.version),
        ).toEqual([2]);
        expect(second.get('tags', runtime.arn)).toEqual({ team: 'a' });
      });
    });

    it('keeps online evaluation rules, lists them in order, deletes one, and holds them on reopen', async () => {
      const first = await track(harness.open());
      const rules = ['a_rule', 'A_rule', 'b'.repeat(48)].map((n, i) =>
        onlineEvaluationRecord(n, `R00000000${i}`),
      );
      for (const [i, rule] of rules.entries()) await first.put('onlineEvaluation', rule.id, rule, '', i);
      expect(first.get('onlineEvaluation', rules[0]!.id)).toEqual(rules[0]);
      const disabled = { ...rules[1]!, executionStatus: 'DISABLED' as const };
      await first.put('onlineEvaluation', disabled.id, disabled, '', 1);
      await first.delete('onlineEvaluation', rules[2]!.id);
      expect(first.list('onlineEvaluation', { offset: 0, limit: 10 }).map((r) => r.id)).toEqual([
        rules[0]!.id,
        rules[1]!.id,
      ]);
      expect(first.count('onlineEvaluation')).toBe(2);
      expect(first.count('runtime')).toBe(0);
      const second = await track(harness.reopen());
      await harness.eventually(() => {
        expect(second.list('onlineEvaluation', { offset: 0, limit: 10 })).toEqual([rules[0], disabled]);
      });
    });

    it('keeps ids apart that differ only in case or in characters a DNS name cannot hold', async () => {
      const store = await track(harness.open());
      const runtimes = ['a_b', 'a_B', 'A_b', 'aB', 'x'.repeat(48)].map((n, i) =>
        runtimeRecord(n, `S00000000${i}`),
      );
      for (const r of runtimes) await seed(store, r, 1);
      const tokens = ['t'.repeat(256), `T${'t'.repeat(255)}`, 'create:a/b c', 'update:ünïcode'];
      for (const t of tokens) await store.put('idempotency', t, { fingerprint: t, response: null });
      for (const r of runtimes) expect(store.get('runtime', r.id)?.name).toBe(r.name);
      for (const t of tokens) expect(store.get('idempotency', t)?.fingerprint).toBe(t);
      expect(store.count('runtime')).toBe(runtimes.length);
    });
  });
}

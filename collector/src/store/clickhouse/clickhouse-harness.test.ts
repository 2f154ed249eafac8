// The harness itself: real servers start, answer, and a cluster really spreads rows over its shards
// and replicates them (what the store's cluster tests rely on).
import { afterAll, describe, expect, it } from 'vitest';
import {
  type ClickHouseHarness,
  clickHouseSkipReason,
  clickHouseSql,
  hasZooKeeper,
  startClickHouse,
  startClickHouseCluster,
} from './clickhouse-harness.test-util.js';

const harnesses: ClickHouseHarness[] = [];
afterAll(async () => {
  await Promise.all(harnesses.map((h) => h.stop()));
});

describe.skipIf(clickHouseSkipReason)(`ClickHouse test harness ${clickHouseSkipReason ?? ''}`, () => {
  it('starts a single node on free ports that answers SQL, and stops it', async () => {
    const t0 = performance.now();
    const h = await startClickHouse();
    harnesses.push(h);
    const startMs = performance.now() - t0;
    expect((await clickHouseSql(h.url, 'SELECT version()')).trim()).toMatch(/^\d+\.\d+/);
    expect(startMs).toBeLessThan(30_000);
    const node = h.nodes[0]!;
    await node.kill();
    await expect(clickHouseSql(h.url, 'SELECT 1')).rejects.toThrow();
    await node.start();
    expect((await clickHouseSql(h.url, 'SELECT 1')).trim()).toBe('1');
  });

  it.skipIf(!hasZooKeeper)(
    'starts two shards × two replicas with ZooKeeper: a Distributed table spreads rows by key, replicas copy them',
    { timeout: 120_000 },
    async () => {
      const h = await startClickHouseCluster({ shards: 2, replicas: 2 });
      harnesses.push(h);
      const ddl = { distributed_ddl_task_timeout: 30 };
      await clickHouseSql(
        h.url,
        `CREATE TABLE t_local ON CLUSTER ${h.cluster} (k UInt64) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/t_local', '{replica}') ORDER BY k`,
        ddl,
      );
      await clickHouseSql(
        h.url,
        `CREATE TABLE t ON CLUSTER ${h.cluster} AS t_local ENGINE = Distributed(${h.cluster}, default, t_local, k)`,
        ddl,
      );
      // Sent as a request setting: a SETTINGS clause of INSERT … SELECT only reaches the SELECT.
      await clickHouseSql(h.url, 'INSERT INTO t SELECT number FROM system.numbers LIMIT 1000', {
        insert_distributed_sync: 1,
      });
      // nodes: shard1-replica1, shard1-replica2, shard2-replica1, shard2-replica2. The insert wrote one
      // replica of each shard; the other catches up asynchronously.
      const counts = (): Promise<number[]> =>
        Promise.all(
          h.nodes.map(async (n) => Number(await clickHouseSql(n.url, 'SELECT count() FROM t_local'))),
        );
      let local = await counts();
      for (let i = 0; i < 100 && (local[0] !== local[1] || local[2] !== local[3]); i++) {
        await new Promise((r) => setTimeout(r, 100));
        local = await counts();
      }
      expect(local[0]! + local[2]!).toBe(1000);
      expect(local[0]).toBeGreaterThan(0);
      expect(local[2]).toBeGreaterThan(0);
      expect(local[1]).toBe(local[0]);
      expect(local[3]).toBe(local[2]);
      expect((await clickHouseSql(h.url, 'SELECT count() FROM t')).trim()).toBe('1000');
    },
  );
});

// The ClickHouse store on a cluster: two shards (ReplicatedMergeTree through ZooKeeper, ON CLUSTER
// DDL) behind Distributed tables, two collectors talking to different shards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Collector } from '../../http/collector.js';
import { metricQuery, sendCumulativeThrough, total } from '../../metrics/metric-fixtures.test-util.js';
import { hex, jsonRequest, jsonSpan, postJson, shipped, startCollector } from '../../testing.test-util.js';
import type { QueryResponse, SessionResponse } from '../../wire-types.js';
import {
  type ClickHouseHarness,
  clickHouseSkipReason,
  clickHouseSql,
  hasZooKeeper,
  startClickHouseCluster,
} from './clickhouse-harness.test-util.js';

const NOW = Date.now();
let ch: ClickHouseHarness | undefined;
const collectors: (Collector & { cleanup: () => Promise<void> })[] = [];

describe.skipIf(clickHouseSkipReason || !hasZooKeeper)(
  `collector on a two-shard ClickHouse cluster ${clickHouseSkipReason ?? ''}`,
  { timeout: 120_000 },
  () => {
    beforeAll(async () => {
      ch = await startClickHouseCluster({ shards: 2, replicas: 1 });
      for (const node of ch.nodes) {
        collectors.push(
          await startCollector({
            store: `clickhouse://default:@127.0.0.1:${node.httpPort}/agentrt_cluster_test?cluster=${ch.cluster}&replicated=1`,
            summaryRefreshIntervalMs: 0,
          }),
        );
      }
    }, 120_000);

    afterAll(async () => {
      for (const c of collectors.splice(0)) await c.cleanup().catch(() => undefined);
      await ch?.stop();
    });

    it('spreads traces over both shards by trace id and answers through either collector', async () => {
      // 40 traces of 3 spans, sent alternately to the collector on each shard.
      for (let t = 0; t < 40; t++) {
        const traceId = hex(0xc1000 + t, 16);
        const spans = [0, 1, 2].map((k) =>
          jsonSpan({
            traceId,
            spanId: hex(t * 4 + k + 1, 8),
            ...(k ? { parentSpanId: hex(t * 4 + 1, 8) } : {}),
            name: k ? 'chat' : 'invoke_agent',
            startMs: NOW - 60_000 + t * 100 + k,
            durationMs: 10 + k,
            attributes: { 'session.id': `cs-${t % 5}` },
          }),
        );
        const res = await postJson(`${collectors[t % 2]!.url}/v1/traces`, jsonRequest('cluster', spans));
        expect(res.status).toBe(200);
      }
      // Shipped from each collector's spool means on its shard (insert_distributed_sync): every
      // shard holds whole traces.
      await Promise.all(collectors.map((c) => shipped(c)));
      const perShard = await Promise.all(
        ch!.nodes.map(async (n) =>
          Number(await clickHouseSql(n.url, 'SELECT count() FROM agentrt_cluster_test.spans_local')),
        ),
      );
      expect(perShard[0]! + perShard[1]!).toBe(120);
      expect(perShard[0]).toBeGreaterThan(0);
      expect(perShard[1]).toBeGreaterThan(0);
      expect(perShard.every((n) => n % 3 === 0)).toBe(true);
      for (const c of collectors) {
        const res = await postJson(`${c.url}/api/query`, {
          query: 'stats count(*) as n, count_distinct(traceId) as traces by name | sort name asc',
        });
        expect(((await res.json()) as QueryResponse).rows).toEqual([
          { name: 'chat', n: 80, traces: 40 },
          { name: 'invoke_agent', n: 40, traces: 40 },
        ]);
        const session = (await (await fetch(`${c.url}/api/sessions/cs-3`)).json()) as SessionResponse;
        expect(session.traces).toHaveLength(8);
        expect(session.session.spanCount).toBe(24);
        const trace = await fetch(`${c.url}/api/traces/${hex(0xc1000 + 7, 16)}`);
        expect(trace.status).toBe(200);
      }
    });

    it('keeps metric series on the shard of their id, and counts an exporter moving between shards once', async () => {
      const urls = collectors.map((c) => c.url);
      // Cumulative totals 2, 5, 9, 10 sent to shard 0, 1, 0, 1; then 10 again, to shard 0.
      const steps = [
        [0, 2],
        [1, 3],
        [0, 4],
        [1, 1],
      ] as const;
      const sent = await sendCumulativeThrough(urls, 'sharded', steps, 0);
      for (const url of urls) {
        const sums = await metricQuery(url, { name: 'sharded.requests', fn: 'sum', stepMs: '3600000' });
        expect(total(sums)).toBe(sent);
        const count = await metricQuery(url, { name: 'sharded.latency', fn: 'count', stepMs: '3600000' });
        expect(total(count)).toBe(sent);
      }
      // Each series' points live on one shard (sharded by series id): one point per series and export
      // (the steps, the repeat and the SDK's last export at shutdown, the last two adding nothing).
      const perShard = await Promise.all(
        ch!.nodes.map(async (n) =>
          (
            await clickHouseSql(
              n.url,
              "SELECT series_id, count() FROM agentrt_cluster_test.metric_points_local WHERE series_id IN (SELECT series_id FROM agentrt_cluster_test.metric_series_local WHERE name LIKE 'sharded.%') GROUP BY series_id",
            )
          )
            .trim()
            .split('\n')
            .filter(Boolean)
            .map((line) => line.split('\t').map(Number) as [number, number]),
        ),
      );
      const ids = perShard.flatMap((rows) => rows.map(([id]) => id));
      expect(new Set(ids).size).toBe(ids.length);
      expect(perShard.flat().map(([, n]) => n)).toEqual([steps.length + 2, steps.length + 2]);
    });
  },
);

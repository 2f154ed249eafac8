import { existsSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

// Tests run from source: workspace packages resolve through the "@agentrt/source" export condition
// to their src/*.ts, so a change is tested without a build. Process-level tests that spawn plain
// `node` use dist/, which `npm test` builds first with `tsc -b`.
//
// Two projects: every test on the default (SQLite) store, and the collector's API suites (ingest of
// every body kind, hostile and malformed bodies, query language, API errors, sessions, live view,
// forwarding, access control, token and price queries, export, hostile queries under ingest,
// metrics from the OpenTelemetry exporters and the metrics form of the language) once more with their collectors on ClickHouse (a real clickhouse-server per test process; the setup file
// sets AGENTRT_TEST_STORE=clickhouse, read by collector/src/testing.test-util.ts).
// Without clickhouse-server (outside CI, where its absence fails the ClickHouse tests instead) the
// second project is left out, saying why.
const clickHousePass = existsSync('/usr/sbin/clickhouse-server') || Boolean(process.env['CI']);
if (!clickHousePass)
  console.warn(
    'vitest: the ClickHouse pass of the collector suite is skipped: /usr/sbin/clickhouse-server is absent',
  );

export default defineConfig({
  resolve: { conditions: ['@agentrt/source'] },
  ssr: { resolve: { conditions: ['@agentrt/source'] } },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default'],
    projects: [
      {
        test: {
          name: 'sqlite',
          include: [
            'packages/*/src/**/*.test.ts',
            'collector/src/**/*.test.ts',
            'collector/ui/src/**/*.test.ts',
            'examples/*/src/**/*.test.ts',
            'test/src/**/*.test.ts',
          ],
        },
      },
      ...(clickHousePass
        ? [
            {
              test: {
                name: 'clickhouse',
                include: [
                  'collector/src/http/collector.test.ts',
                  'collector/src/http/export.test.ts',
                  'collector/src/http/hostile.test.ts',
                  'collector/src/http/access.test.ts',
                  'collector/src/trace-model/token-query.test.ts',
                  'collector/src/cost/prices-api.test.ts',
                  'collector/src/metrics/metrics.test.ts',
                  'collector/src/query/metric-form.test.ts',
                ],
                setupFiles: ['collector/src/test-store-clickhouse.setup.ts'],
              },
            },
          ]
        : []),
    ],
  },
});

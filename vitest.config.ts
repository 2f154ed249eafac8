import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

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

// The fast tier (`npm run test:fast`, vitest --mode fast; about 30 s on 2 cores): the test files
// beside the code that open no socket and start no child process (SQLite in memory or in a temporary
// folder, and worker threads, are fine). Picked by measuring; every one of them is in the full suite
// too. A new unit test that stays inside those limits belongs here.
const FAST_TIER = [
  'collector/src/cost/prices.test.ts',
  'collector/src/metrics/rollups.test.ts',
  'collector/src/otlp/decode.test.ts',
  'collector/src/query/pattern.test.ts',
  'collector/src/query/query-fuzz.test.ts',
  'collector/src/query/query.test.ts',
  'collector/src/query/sqlite-deadline.test.ts',
  'collector/src/query/sqlite-sql.test.ts',
  'collector/src/store/batcher.test.ts',
  'collector/src/store/reader-pool.test.ts',
  'collector/src/store/clickhouse/spool.test.ts',
  'collector/src/store/sqlite/sqlite-backend.test.ts',
  'collector/src/store/sqlite/span-store.test.ts',
  'collector/src/store/sqlite/trace-pages.test.ts',
  'collector/src/store/summaries.test.ts',
  'collector/src/store/sqlite/writer-thread.test.ts',
  'collector/src/trace-model/critical-path.test.ts',
  'collector/src/trace-model/genai.test.ts',
  'collector/src/trace-model/span-tree.test.ts',
  'collector/src/trace-model/tokens.test.ts',
  'collector/ui/src/agents-links.test.ts',
  'collector/ui/src/evals.test.ts',
  'collector/ui/src/format.test.ts',
  'collector/ui/src/log-rows.test.ts',
  'collector/ui/src/inspector-model.test.ts',
  'collector/ui/src/query-helpers.test.ts',
  'collector/ui/src/router.test.ts',
  'collector/ui/src/schema-form.test.ts',
  'collector/ui/src/trace-views.test.ts',
  'collector/ui/src/waterfall-model.test.ts',
  'examples/models/src/genai-telemetry.test.ts',
  'examples/models/src/providers.test.ts',
  'examples/models/src/strands-telemetry.test.ts',
  'packages/cli/src/dev/model-provider.test.ts',
  'packages/cli/src/dev/progress.test.ts',
  'packages/cli/src/main.test.ts',
  'packages/instrument/src/attribute-filter.test.ts',
  'packages/instrument/src/config.test.ts',
  'packages/instrument/src/http-client.test.ts',
  'packages/instrument/src/instrumentations.test.ts',
  'packages/instrument/src/lean/lean.test.ts',
  'packages/instrument/src/lean/logger.test.ts',
  'packages/instrument/src/lean/meter.test.ts',
  'packages/instrument/src/node-options.test.ts',
  'packages/instrument/src/otlp/trace-serializer.test.ts',
  'packages/instrument/src/propagators.test.ts',
  'packages/instrument/src/span-processors.test.ts',
  'packages/instrument/src/url-redaction.test.ts',
  'packages/kit/src/logger.test.ts',
  'packages/propagation/src/agent-propagator.test.ts',
  'packages/propagation/src/request-guard.test.ts',
  'packages/propagation/src/server-span.test.ts',
  'packages/runtime/src/data/relay-body.test.ts',
  'packages/runtime/src/control/store/sqlite-store.test.ts',
  'packages/runtime/src/control/artifacts.test.ts',
  'packages/runtime/src/sessions/backends/kubernetes/pod-spec.test.ts',
  'packages/runtime/src/sessions/worker-output.test.ts',
  'packages/runtime/src/evaluate/judge/parse-answer.test.ts',
  'packages/runtime/src/evaluate/custom/module-evaluator.test.ts',
  'packages/runtime/src/evaluate/trajectory.test.ts',
  'packages/runtime/src/sessions/warm-demand.test.ts',
  'packages/runtime/src/units.test.ts',
];

// Test files run side by side, one more than the cores. Vitest's default (one fewer than the
// cores) ran the full suite one file at a time on CI's 2 cores (720 s), while most of a file's time
// is spent waiting on the servers and child processes it starts. Every file listens on port 0 and
// keeps its data in a folder of its own, so files share nothing but the CPU; AGENTRT_TEST_WORKERS
// overrides the count (1 runs them one at a time again).
const testWorkers = Number(process.env['AGENTRT_TEST_WORKERS']) || availableParallelism() + 1;

// Files whose assertions are about time or memory under their own load (/healthz stays fast while
// hostile queries run; a 100,000-span session streams within a memory bound; a hostile agent's
// commands meet its session's memory, process and CPU limits): they run last, one at
// a time, so that no other file's work is in their figures.
const ALONE = [
  'collector/src/http/hostile.test.ts',
  'collector/src/http/session-spans.test.ts',
  // Two runtime processes and 23 pods on the test kubelet, a lease timed in seconds.
  'packages/runtime/src/control/replica-kill.test.ts',
  // Two runtime processes, the leader killed, a lease timed in seconds.
  'packages/runtime/src/control/keeper-failover.test.ts',
  'packages/runtime/src/sessions/hostile.test.ts',
];

// The UI tests in Chromium run after the rest, side by side: podman's network set-up on the host (the
// runtime's container tests) makes Chromium drop the requests it has in flight
// (net::ERR_NETWORK_CHANGED).
const BROWSER = ['test/src/ui/**/*.test.ts'];

// The collector's API suites that run a second time on ClickHouse.
const CLICKHOUSE_PASS = [
  'collector/src/http/collector.test.ts',
  'collector/src/http/export.test.ts',
  'collector/src/http/session-spans.test.ts',
  'collector/src/http/trace-records.test.ts',
  'collector/src/http/import.test.ts',
  'collector/src/http/hostile.test.ts',
  'collector/src/http/access.test.ts',
  'collector/src/trace-model/token-query.test.ts',
  'collector/src/cost/prices-api.test.ts',
  'collector/src/metrics/metrics.test.ts',
  'collector/src/query/metric-form.test.ts',
];
const CLICKHOUSE_SETUP = ['collector/src/test-store-clickhouse.setup.ts'];

// The AWS-SDK session and command suites once more with AGENTRT_SESSIONS=kubernetes: every session a pod on a
// test API server, run by a test kubelet (packages/runtime/src/test-support/k8s) — in both of the
// backend's modes: `pods`, and `agent-sandbox` (SandboxClaims reconciled by the test controller).
const KUBERNETES_PASS = ['packages/runtime/src/sessions.test.ts', 'packages/runtime/src/commands.test.ts'];
const KUBERNETES_SETUP = ['packages/runtime/src/test-support/k8s/kubernetes-sessions.setup.ts'];

type Group = 'side by side' | 'browser' | 'alone';
const GROUP_ORDER: Record<Group, number> = { 'side by side': 0, browser: 1, alone: 2 };

/** A project of `include`'s files that belong to `group` (browser: the UI tests); groups run in turn. */
function project(
  name: string,
  include: string[],
  group: Group,
  setupFiles: string[] = [],
  env: Record<string, string> = {},
) {
  const files =
    group === 'alone' ? include.filter((f) => ALONE.includes(f)) : group === 'browser' ? BROWSER : include;
  return {
    test: {
      name,
      include: files,
      exclude: [...configDefaults.exclude, ...(group === 'side by side' ? [...ALONE, ...BROWSER] : [])],
      setupFiles,
      env,
      sequence: { groupOrder: GROUP_ORDER[group] },
      ...(group === 'alone' ? { fileParallelism: false } : {}),
    },
  };
}

const EVERY_TEST = [
  'packages/*/src/**/*.test.ts',
  'collector/src/**/*.test.ts',
  'collector/ui/src/**/*.test.ts',
  'examples/*/src/**/*.test.ts',
  'test/src/**/*.test.ts',
];

export default defineConfig(({ mode }) => {
  const fast = mode === 'fast';
  if (!fast && !clickHousePass)
    console.warn(
      'vitest: the ClickHouse pass of the collector suite is skipped: /usr/sbin/clickhouse-server is absent',
    );
  return {
    resolve: { conditions: ['@agentrt/source'] },
    ssr: { resolve: { conditions: ['@agentrt/source'] } },
    test: {
      testTimeout: 30_000,
      hookTimeout: 60_000,
      pool: 'forks',
      maxWorkers: testWorkers,
      reporters: ['default'],
      projects: fast
        ? [{ test: { name: 'fast', include: FAST_TIER } }]
        : [
            project('sqlite', EVERY_TEST, 'side by side'),
            project('browser', EVERY_TEST, 'browser'),
            project('sqlite (alone)', ALONE, 'alone'),
            project('kubernetes', KUBERNETES_PASS, 'side by side', KUBERNETES_SETUP),
            project('kubernetes (agent-sandbox)', KUBERNETES_PASS, 'side by side', KUBERNETES_SETUP, {
              AGENTRT_K8S_MODE: 'agent-sandbox',
            }),
            ...(clickHousePass
              ? [
                  project('clickhouse', CLICKHOUSE_PASS, 'side by side', CLICKHOUSE_SETUP),
                  project('clickhouse (alone)', CLICKHOUSE_PASS, 'alone', CLICKHOUSE_SETUP),
                ]
              : []),
          ],
    },
  };
});

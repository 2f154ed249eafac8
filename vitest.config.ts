import { defineConfig } from 'vitest/config';

// Tests run from source: workspace packages resolve through the "@agentrt/source" export condition
// to their src/*.ts, so a change is tested without a build. Process-level tests that spawn plain
// `node` use dist/, which `npm test` builds first with `tsc -b`.
export default defineConfig({
  resolve: { conditions: ['@agentrt/source'] },
  ssr: { resolve: { conditions: ['@agentrt/source'] } },
  test: {
    include: [
      'packages/*/src/**/*.test.ts',
      'collector/src/**/*.test.ts',
      'collector/ui/src/**/*.test.ts',
      'examples/*/src/**/*.test.ts',
      'test/src/**/*.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default'],
  },
});

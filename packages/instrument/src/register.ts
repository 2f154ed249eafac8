/**
 * Preload entry for `node --import @agentrt/instrument app.mjs` (ESM apps; works for CommonJS
 * apps too). Registers the import-in-the-middle loader hook in "only the hooked modules" mode, so
 * the loader wraps just the modules an enabled instrumentation asked for, then starts telemetry
 * and waits until the loader thread has acknowledged every hooked module name, before the app's
 * first `import` is resolved.
 */
import { register } from 'node:module';
import { createAddHookMessageChannel } from 'import-in-the-middle';
import { startFromEnvironment } from './preload.js';

let waitForLoader: (() => Promise<void>) | undefined;
try {
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
  waitForLoader = waitForAllMessagesAcknowledged;
} catch (error) {
  process.stderr.write(
    `agentrt-instrument: ESM loader hook unavailable, ESM-only libraries will not be patched: ${
      error instanceof Error ? error.message : String(error)
    }\n`,
  );
}

startFromEnvironment();
if (waitForLoader !== undefined) await waitForLoader();

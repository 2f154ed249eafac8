/**
 * Preload entry for `node --import @agentrt/instrument app.mjs` (ESM apps; works for CommonJS
 * apps too). Adds the import-in-the-middle loader hook so ES modules get patched, limited to the
 * modules the enabled instrumentations patch. The SDK is loaded before the hook is registered, so
 * its own hundreds of modules do not go through the hook.
 *
 * Where Node can run import-in-the-middle's synchronous, in-thread hooks (`module.registerHooks`:
 * Node >= 22.22.3, >= 24.11.1), those are used: no loader thread, no message round trips.
 * Elsewhere (or with AGENTRT_ESM_LOADER=async) the asynchronous `module.register` loader runs in
 * "only hooked modules" mode: the instrumentations' module names wait in the message channel until
 * the loader starts, and the app's first `import` is resolved only after the loader has
 * acknowledged all of them.
 */
import { builtinModules, register } from 'node:module';
import { createAddHookMessageChannel } from 'import-in-the-middle';
import { supportsSyncHooks } from 'import-in-the-middle/supports-sync-hooks.mjs';
import { startFromEnvironment } from './preload.js';

// Created before the instrumentations so their Hook() calls post their module names into it; left
// unused (and harmless: its ports are unreferenced) when the synchronous hooks are chosen.
let channel: ReturnType<typeof createAddHookMessageChannel> | undefined;
try {
  channel = createAddHookMessageChannel();
} catch (error) {
  warn(error);
}

const telemetry = startFromEnvironment();

if (telemetry !== undefined) {
  try {
    const mode = telemetry.config.esmLoader;
    if (mode === 'sync' && !supportsSyncHooks()) {
      warn(new Error(`Node ${process.version} cannot run synchronous loader hooks; using the loader thread`));
    }
    if (mode !== 'async' && supportsSyncHooks()) {
      const include = telemetry.moduleNames.flatMap((name) =>
        builtinModules.includes(name) ? [name, `node:${name}`] : [name],
      );
      const hooks = await import('import-in-the-middle/register-hooks.mjs');
      hooks.register({ include });
    } else if (channel !== undefined) {
      register('import-in-the-middle/hook.mjs', import.meta.url, channel.registerOptions);
      await channel.waitForAllMessagesAcknowledged();
    }
  } catch (error) {
    warn(error);
  }
}

function warn(error: unknown): void {
  process.stderr.write(
    `agentrt-instrument: ESM loader hook unavailable, ES modules will not be patched: ${
      error instanceof Error ? error.message : String(error)
    }\n`,
  );
}

/**
 * Preload entry for `node --import @agentrt/instrument app.mjs`. Does the same as the `--require`
 * entry (register-require.ts): starts telemetry, then adds the ESM loader hook. Both flags work
 * for ES module and CommonJS apps; the SDK is loaded before the hook is installed, so its own
 * hundreds of modules do not go through the hook.
 */
import { installEsmHook } from './esm-hook.js';
import { startFromEnvironment } from './preload.js';

const telemetry = startFromEnvironment();
if (telemetry !== undefined) installEsmHook(telemetry);

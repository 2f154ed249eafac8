import { createRequire, enableCompileCache } from 'node:module';
import * as workerThreads from 'node:worker_threads';
import { readConfig } from './config.js';
import { createOnceLogger, installDiagLogger } from './diag-logger.js';
import type * as LifecycleModule from './lifecycle.js';
import type * as TelemetryModule from './telemetry.js';
import type { Telemetry } from './telemetry.js';

/** Where the running pipeline is kept, so a second load (both entry points) does not start twice. */
export const TELEMETRY_KEY = Symbol.for('agentrt.instrument.telemetry');

const require = createRequire(import.meta.url);

/**
 * What `--require`/`--import @agentrt/instrument` runs. Reads the configuration first (a small
 * module) and loads the SDK only when telemetry is on; turns on Node's compile cache before that
 * unless `AGENTRT_COMPILE_CACHE=false`. Never throws into the host: on any failure it prints one
 * line and the app runs uninstrumented.
 */
export function startFromEnvironment(): Telemetry | undefined {
  const globals = globalThis as Record<symbol, Telemetry | undefined>;
  if (globals[TELEMETRY_KEY] !== undefined) return globals[TELEMETRY_KEY];
  // Node runs `--require` preloads in its module.register loader thread too: nothing to trace there
  if ((workerThreads as { isInternalThread?: boolean }).isInternalThread === true) return undefined;
  try {
    const logger = createOnceLogger();
    const config = readConfig({}, process.env, (message) => logger.warnOnce(message));
    installDiagLogger(logger, config.logLevel);
    if (config.disabled) return undefined;
    if (config.compileCache) {
      try {
        enableCompileCache();
      } catch {
        // an unwritable cache directory only costs start-up time
      }
    }
    // require(esm): synchronous, so the SDK is ready before the app's first line runs
    const { startWithConfig } = require('./telemetry.js') as typeof TelemetryModule;
    const { installExitHandlers } = require('./lifecycle.js') as typeof LifecycleModule;
    const telemetry = startWithConfig(config);
    globals[TELEMETRY_KEY] = telemetry;
    installExitHandlers(telemetry);
    return telemetry;
  } catch (error) {
    try {
      const reason = error instanceof Error ? error.message : String(error);
      process.stderr.write(
        `agentrt-instrument: could not start telemetry, running uninstrumented: ${reason}\n`,
      );
    } catch {
      // stderr unavailable: stay silent rather than crash the host
    }
    return undefined;
  }
}

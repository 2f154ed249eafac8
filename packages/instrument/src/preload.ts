import { installExitHandlers } from './lifecycle.js';
import { type Telemetry, startTelemetry } from './telemetry.js';

const STARTED = Symbol.for('agentrt.instrument.started');

/**
 * What `--require`/`--import @agentrt/instrument` runs: starts telemetry from the environment and
 * installs the exit handlers. Never throws into the host: on any failure it prints one line and
 * the app runs uninstrumented. Idempotent (both entry points may end up loaded).
 */
export function startFromEnvironment(): Telemetry | undefined {
  const globals = globalThis as Record<symbol, Telemetry | undefined>;
  if (globals[STARTED] !== undefined) return globals[STARTED];
  try {
    const telemetry = startTelemetry();
    globals[STARTED] = telemetry;
    if (!telemetry.config.disabled) installExitHandlers(telemetry);
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

import type { Telemetry } from './telemetry.js';

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;
type ExitSignal = (typeof SIGNALS)[number];

/**
 * Flushes telemetry on SIGTERM, SIGINT and beforeExit, then lets the process exit as it would
 * have without us: if the app has no handler of its own for the signal, the signal is re-raised
 * after the flush (exit status 128+n, "killed by SIGTERM"); if it has one, the app decides and we
 * only flush, and a `process.exit()` the app calls while that flush runs is held until the flush
 * is done (at most the flush deadline), so the spans of its last requests are not lost. A second
 * signal while flushing exits at once. Returns an uninstall function.
 */
export function installExitHandlers(telemetry: Telemetry, proc: NodeJS.Process = process): () => void {
  const handlers = new Map<ExitSignal, () => void>();
  let flushing = false;

  const reRaise = (signal: ExitSignal) => {
    uninstall();
    proc.kill(proc.pid, signal);
  };

  for (const signal of SIGNALS) {
    const handler = () => {
      const appHandlesIt = proc.listenerCount(signal) > 1;
      if (appHandlesIt) {
        holdExitUntil(telemetry.forceFlush());
        return;
      }
      if (flushing) {
        reRaise(signal);
        return;
      }
      flushing = true;
      void telemetry.shutdown().finally(() => reRaise(signal));
    };
    handlers.set(signal, handler);
    proc.on(signal, handler);
  }
  const onBeforeExit = () => {
    void telemetry.shutdown();
  };
  proc.once('beforeExit', onBeforeExit);

  function holdExitUntil(flushed: Promise<void>) {
    const originalExit = proc.exit;
    let requested: { code: Parameters<NodeJS.Process['exit']>[0] } | undefined;
    proc.exit = ((code?: Parameters<NodeJS.Process['exit']>[0]) => {
      requested ??= { code };
    }) as NodeJS.Process['exit'];
    void flushed.finally(() => {
      if (proc.exit !== originalExit) proc.exit = originalExit;
      if (requested !== undefined) originalExit.call(proc, requested.code);
    });
  }

  function uninstall() {
    for (const [signal, handler] of handlers) proc.removeListener(signal, handler);
    handlers.clear();
    proc.removeListener('beforeExit', onBeforeExit);
  }
  return uninstall;
}

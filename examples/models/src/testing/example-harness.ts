import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import { afterAll, afterEach } from 'vitest';
import { type RunningContainer, startContainerCommand } from './container-command.js';

/** Telemetry off for process tests that do not look at it (no export to a collector that may be running). */
export const NO_TELEMETRY_EXPORT: Readonly<Record<string, string>> = Object.freeze({
  OTEL_TRACES_EXPORTER: 'none',
  OTEL_METRICS_EXPORTER: 'none',
  OTEL_LOGS_EXPORTER: 'none',
});

export interface StartedExample {
  readonly container: RunningContainer;
  /** `http://127.0.0.1:<port>` of the first listening log line. */
  readonly url: string;
}

/**
 * Registers cleanup (SIGKILL of the whole process group after each test, or after all tests of the
 * enclosing describe with `cleanup: 'all'`) and returns a starter
 * that runs an example's container command on 127.0.0.1 and a free port, waits for `listeningMsg`
 * `count` times, and gives its URL. `env` wins over the defaults (telemetry export off).
 */
export function useExampleContainers({ cleanup = 'each' }: { cleanup?: 'each' | 'all' } = {}): (
  exampleDir: string,
  env: Record<string, string>,
  options?: { listeningMsg?: string; count?: number },
) => Promise<StartedExample> {
  const running: RunningContainer[] = [];
  (cleanup === 'each' ? afterEach : afterAll)(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop('SIGKILL', 5_000)));
  });
  return async (exampleDir, env, { listeningMsg = 'listening', count = 1 } = {}) => {
    const container = startContainerCommand(exampleDir, {
      PORT: '0',
      HOST: '127.0.0.1',
      ...NO_TELEMETRY_EXPORT,
      ...env,
    });
    running.push(container);
    const first = await container.waitForLog((l) => l.msg === listeningMsg, 90_000);
    for (let i = 1; i < count; i++) {
      await container.waitForLog(
        () => container.logs.filter((l) => l.msg === listeningMsg).length > i,
        90_000,
      );
    }
    return { container, url: `http://127.0.0.1:${String(first.port)}` };
  };
}

/** True when the service logged, at warn level, that the offline model answers. */
export function loggedOfflineNotice(container: RunningContainer): boolean {
  return container.logs.some(
    (l) => l.level === 'warn' && String(l.msg).includes('offline deterministic model'),
  );
}

/** Serves a Koa app on 127.0.0.1 and a free port; `close` cuts open connections. */
export async function listenKoa(app: Koa): Promise<{ url: string; server: Server; close: () => void }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

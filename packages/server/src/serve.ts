import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { type AgentApp, createApp } from './app.js';
import type { AgentAppOptions, Entrypoint } from './app-options.js';
import { readConfig } from './config.js';
import { type Logger, createJsonLineLogger } from './logger.js';

/** Options of {@link serve}: the app's options plus where to listen and how to stop. */
export interface ServeOptions extends AgentAppOptions {
  /** Port. Default `PORT` or 8080. 0 picks a free port. */
  port?: number;
  /** Interface. Default `AGENTRT_HOST` or `0.0.0.0`. */
  host?: string;
  /** How long SIGTERM/SIGINT wait for in-flight invocations and streams. Default `AGENTRT_DRAIN_TIMEOUT_MS` or 10 s. */
  drainTimeoutMs?: number;
  /** Install SIGTERM/SIGINT handlers that drain and exit. Default true. */
  handleSignals?: boolean;
  /** Runs after draining, before the process exits (flush telemetry here). */
  onShutdown?: () => void | Promise<void>;
}

/** A listening agent server. */
export interface RunningServer {
  readonly app: AgentApp;
  readonly server: Server;
  /** The bound port (useful with port 0). */
  readonly port: number;
  /** `http://<host>:<port>` (127.0.0.1 when bound to all interfaces). */
  readonly url: string;
  /**
   * Stops accepting connections, waits up to the drain timeout for in-flight invocations and
   * streams, then aborts what is left and closes every connection. Does not exit the process.
   */
  close(): Promise<void>;
}

/**
 * Runs an agent: `serve(async ({ prompt }) => ({ answer: prompt }))`. Listens on 0.0.0.0:8080
 * unless told otherwise, logs JSON lines to stdout, and on SIGTERM or SIGINT drains in-flight work
 * (up to the drain timeout), runs `onShutdown` and exits with code 0.
 */
export async function serve(
  entrypoint: Entrypoint | AgentApp,
  options: ServeOptions = {},
): Promise<RunningServer> {
  const config = readConfig(process.env);
  const logger: Logger = options.logger ?? createJsonLineLogger({ level: config.logLevel });
  readConfig(process.env, logger.warn); // re-read only to report bad values through the chosen logger
  const app = typeof entrypoint === 'function' ? createApp(entrypoint, { ...options, logger }) : entrypoint;
  const port = options.port ?? config.port;
  const host = options.host ?? config.host;
  const drainTimeoutMs = options.drainTimeoutMs ?? config.drainTimeoutMs;
  const server = await app.listen(port, host);
  const bound = (server.address() as AddressInfo).port;
  const url = `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${bound}`;

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      app.startDraining();
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), drainTimeoutMs);
      });
      const outcome = await Promise.race([app.whenIdle().then(() => 'idle' as const), deadline]);
      clearTimeout(timer);
      if (outcome === 'timeout') {
        logger.warn('drain timeout reached; aborting in-flight invocations', {
          inFlight: app.inFlight,
          drainTimeoutMs,
        });
        app.abortInFlight(new Error(`server shutting down: drain timeout of ${drainTimeoutMs} ms reached`));
        // Give the aborted streams a moment to send their closing event before sockets are cut.
        await Promise.race([app.whenIdle(), new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
      }
      server.closeAllConnections();
      await stopped;
    })());

  if (options.handleSignals ?? true) {
    let signalled = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (signalled) {
        logger.warn('second signal: exiting now', { signal });
        process.exit(1);
      }
      signalled = true;
      logger.info('draining', { signal, inFlight: app.inFlight, drainTimeoutMs });
      void close()
        .then(() => options.onShutdown?.())
        .then(
          () => {
            logger.info('stopped', { signal });
            process.exit(0);
          },
          (err: unknown) => {
            logger.error('shutdown failed', { error: String(err) });
            process.exit(1);
          },
        );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    server.once('close', () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    });
  }
  // Logged last: whoever waits for this line may signal the process at once.
  logger.info('listening', { host, port: bound, url });
  return { app, server, port: bound, url, close };
}

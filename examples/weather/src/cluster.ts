import cluster, { type Worker } from 'node:cluster';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Logger, createLogger, createServiceModel } from '@agentrt/example-models';
import { createWeatherApp } from './app.js';
import type { WeatherServiceConfig } from './config.js';

/** Messages between the primary and its workers, keyed by `type`. */
type PrimaryMessage = { type: 'shutdown' };
type WorkerMessage = { type: 'listening'; port: number };

const RESTART_WINDOW_MS = 10_000;
const MAX_RESTARTS_IN_WINDOW = 5;

function stdoutLogger(config: WeatherServiceConfig, fields: Record<string, unknown>): Logger {
  return createLogger({
    name: 'weather',
    level: config.logLevel,
    write: (line) => process.stdout.write(line),
    fields,
  });
}

/**
 * The primary process: forks `config.workers` workers that share the listening socket, restarts a
 * worker that dies (unless workers keep dying), and on SIGTERM/SIGINT asks every worker to drain,
 * waits for them (SIGKILL after the drain timeout plus a grace period) and exits.
 */
export function runPrimary(config: WeatherServiceConfig): void {
  const log = stdoutLogger(config, { role: 'primary', pid: process.pid });
  for (const warning of config.warnings) log.warn(warning);
  let shuttingDown = false;
  const restarts: number[] = [];

  const fork = (): Worker => {
    const worker = cluster.fork();
    worker.on('message', (message: WorkerMessage) => {
      if (message?.type === 'listening') {
        log.info('worker listening', {
          workerPid: worker.process.pid,
          port: message.port,
          host: config.host,
        });
      }
    });
    return worker;
  };

  cluster.on('exit', (worker, code, signal) => {
    if (shuttingDown) {
      log.info('worker stopped', { workerPid: worker.process.pid, code, signal });
      if (Object.values(cluster.workers ?? {}).every((w) => w === undefined || w.isDead())) {
        log.info('stopped');
        // The loop normally empties now (the telemetry preload flushes on beforeExit); this only
        // bounds the wait when an exporter keeps retrying an unreachable collector.
        setTimeout(() => process.exit(), 3_000).unref();
      }
      return;
    }
    const now = Date.now();
    restarts.push(now);
    while (restarts.length > 0 && restarts[0]! < now - RESTART_WINDOW_MS) restarts.shift();
    if (restarts.length > MAX_RESTARTS_IN_WINDOW) {
      log.error('workers keep dying; giving up', { workerPid: worker.process.pid, code, signal });
      process.exitCode = 1;
      shutdown('worker crash loop');
      return;
    }
    log.error('worker died; starting a new one', { workerPid: worker.process.pid, code, signal });
    fork();
  });

  const shutdown = (reason: string) => {
    if (shuttingDown) {
      if (reason.startsWith('SIG')) {
        log.warn('second signal while shutting down; exiting now', { reason });
        process.exit(1);
      }
      return;
    }
    shuttingDown = true;
    log.info('shutting down', { reason, drainTimeoutMs: config.drainTimeoutMs });
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    for (const worker of workers) {
      if (worker.isConnected()) worker.send({ type: 'shutdown' } satisfies PrimaryMessage);
    }
    const killTimer = setTimeout(() => {
      for (const worker of workers) {
        if (!worker.isDead()) {
          log.warn('worker did not stop in time; killing it', { workerPid: worker.process.pid });
          worker.process.kill('SIGKILL');
        }
      }
    }, config.drainTimeoutMs + 2_000);
    killTimer.unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  for (let i = 0; i < config.workers; i++) fork();
}

/**
 * A worker: serves the weather app on the shared port; on a shutdown message (or its own
 * SIGTERM/SIGINT) stops accepting, lets in-flight requests finish within the drain timeout, then
 * leaves the event loop to empty so the telemetry preload can flush before the process exits.
 */
export async function runWorker(config: WeatherServiceConfig): Promise<Server> {
  const log = stdoutLogger(config, { role: 'worker', pid: process.pid });
  // The primary already logged the unusable settings; a worker logs its model choice.
  const model = createServiceModel(cluster.isWorker ? { ...config, warnings: [] } : config, log);
  const app = createWeatherApp({
    model,
    weatherApi: config.weatherApi,
    captureContent: config.model.captureMessageContent,
    logger: log,
    apiKeys: config.apiKeys,
    maxBodyBytes: config.maxBodyBytes,
  });
  const server = app.koa.listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  if (cluster.isWorker) process.send?.({ type: 'listening', port } satisfies WorkerMessage);
  else log.info('listening', { port, host: config.host });

  let stopping = false;
  const stop = async (reason: string) => {
    if (stopping) return;
    stopping = true;
    log.info('draining', { reason, inFlight: app.inFlight });
    server.close();
    server.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>(
      (resolve) => (timer = setTimeout(() => resolve('timeout'), config.drainTimeoutMs)),
    );
    const outcome = await Promise.race([app.whenIdle().then(() => 'idle' as const), deadline]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      log.warn('drain timeout reached; aborting in-flight requests', { inFlight: app.inFlight });
      app.abortInFlight(new Error('server shutting down'));
    }
    server.closeAllConnections();
    log.info('stopped');
    if (cluster.isWorker) cluster.worker?.disconnect();
    // Normally the loop empties and the process exits by itself (the preload flushes on beforeExit).
    setTimeout(() => process.exit(0), 5_000).unref();
  };
  process.on('message', (message: PrimaryMessage) => {
    if (message?.type === 'shutdown') void stop('primary asked');
  });
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  return server;
}

/**
 * The custom agent: `node --require @agentrt/instrument dist/main.js`. Plain Koa with agentrt's
 * `agentContext()` middleware, on HOST:PORT (default 0.0.0.0:8080).
 */
import { bootService } from '@agentrt/example-models';
import { createCustomAgentApp } from './app.js';
import { loadConfig } from './config.js';

const config = loadConfig();
const { logger, model } = bootService('custom-agent', config);

const app = createCustomAgentApp({
  model,
  weatherApi: config.weatherApi,
  captureContent: config.model.captureMessageContent,
  logger,
});
const server = app.listen(config.port, config.host, () => {
  const address = server.address();
  logger.info('listening', {
    host: config.host,
    port: typeof address === 'object' && address ? address.port : config.port,
  });
});
const stop = (signal: string) => {
  logger.info('draining', { signal });
  server.close(() => logger.info('stopped'));
  server.closeIdleConnections();
  // In-flight answers finish; a stuck one is cut after the drain window.
  setTimeout(() => {
    server.closeAllConnections();
    process.exit(0);
  }, config.drainTimeoutMs).unref();
};
process.once('SIGTERM', () => stop('SIGTERM'));
process.once('SIGINT', () => stop('SIGINT'));

/**
 * The weather A2A agent: `node --require @agentrt/instrument dist/main.js`. JSON-RPC at POST / on
 * HOST:PORT (default 0.0.0.0:9000, the A2A container contract), its card announcing
 * AGENTCORE_RUNTIME_URL.
 */
import { bootService } from '@agentrt/example-models';
import { createA2aApp } from './app.js';
import { loadConfig } from './config.js';

const config = loadConfig();
const { logger, model } = bootService('a2a-agent', config);
const app = createA2aApp({
  model,
  weatherApi: config.weatherApi,
  captureContent: config.model.captureMessageContent,
  logger,
  publicUrl: config.publicUrl,
});
const server = app.listen(config.port, config.host, () => {
  const address = server.address();
  logger.info('listening', {
    host: config.host,
    port: typeof address === 'object' && address ? address.port : config.port,
    card: `${config.publicUrl}.well-known/agent-card.json`,
  });
});
const stop = (signal: string) => {
  logger.info('stopping', { signal });
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), config.drainTimeoutMs).unref();
};
process.once('SIGTERM', () => stop('SIGTERM'));
process.once('SIGINT', () => stop('SIGINT'));

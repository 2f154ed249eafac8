/**
 * The custom agent: `node --require @agentrt/instrument dist/main.js`. Plain Koa with agentrt's
 * `agentContext()` middleware, on HOST:PORT (default 0.0.0.0:8080).
 */
import { bootService, serveUntilSignal } from '@agentrt/example-models';
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
serveUntilSignal((port, host, ready) => app.listen(port, host, ready), config, logger);

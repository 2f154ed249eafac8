/**
 * The AG-UI agent: `node --require @agentrt/instrument dist/main.js`, on HOST:PORT (default
 * 0.0.0.0:8080, where the runtime's AGUI protocol sends invocations).
 */
import { bootService, serveUntilSignal } from '@agentrt/example-models';
import { createAguiAgentServer } from './app.js';
import { loadConfig } from './config.js';

const config = loadConfig();
const { logger, model } = bootService('agui-agent', config);
const server = createAguiAgentServer({
  model,
  weatherApi: config.weatherApi,
  captureContent: config.model.captureMessageContent,
  logger,
});
serveUntilSignal((port, host, ready) => server.listen(port, host, ready), config, logger);

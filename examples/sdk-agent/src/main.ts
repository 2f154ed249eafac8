/**
 * The SDK-integration agent: `node --require @agentrt/instrument dist/main.js`. Serves
 * `POST /invocations` and `GET /ping` on HOST:PORT (default 0.0.0.0:8080) via `@agentrt/server`.
 */
import { bootService } from '@agentrt/example-models';
import { serve } from '@agentrt/server';
import { loadConfig } from './config.js';
import { createSdkEntrypoint } from './entrypoint.js';

const config = loadConfig();
const { logger, model } = bootService('sdk-agent', config);
await serve(
  createSdkEntrypoint({
    model,
    weatherApi: config.weatherApi,
    captureContent: config.model.captureMessageContent,
  }),
  { port: config.port, host: config.host, drainTimeoutMs: config.drainTimeoutMs, logger },
);

import { randomUUID } from 'node:crypto';
import { type AgentCard, type Message, Role } from '@a2a-js/sdk';
import {
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';
import {
  type Logger,
  type ModelSelection,
  type WeatherApiConfig,
  askWeatherAgent,
} from '@agentrt/example-models';
import express, { type Express } from 'express';

export interface A2aAgentOptions {
  readonly model: ModelSelection;
  readonly weatherApi: WeatherApiConfig;
  readonly captureContent: boolean;
  readonly logger: Logger;
  /** The JSON-RPC URL the card announces (through the runtime when hosted). */
  readonly publicUrl: string;
}

/** The weather agent's card (A2A 1.0, one JSON-RPC interface). */
export function weatherAgentCard(url: string): AgentCard {
  return {
    name: 'Weather agent',
    description: 'Answers questions about US weather forecasts (national weather API)',
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: { organization: 'agentrt examples', url: 'https://github.com/agentrt' },
    version: '0.1.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'forecast',
        name: 'Weather forecast',
        description: 'Forecast for a place given as coordinates, a ZIP code or a city',
        tags: ['weather', 'forecast'],
        examples: ['What is the weather at 47.6062,-122.3321?', 'Forecast for Denver'],
        inputModes: ['text/plain'],
        outputModes: ['text/plain'],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

export function textMessage(role: Role, text: string, contextId = '', taskId = ''): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role,
    parts: [
      { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The text parts of a message, joined. */
export function messageText(message: Message): string {
  return message.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
}

/** Runs the weather agent on the user's text and publishes its answer as one agent message. */
export function createWeatherExecutor(options: A2aAgentOptions): AgentExecutor {
  return {
    async execute(ctx: RequestContext, bus: ExecutionEventBus) {
      const prompt = messageText(ctx.userMessage).trim();
      let text: string;
      if (!prompt) text = 'Send a question about the weather, e.g. "Forecast for Denver".';
      else {
        try {
          text = (
            await askWeatherAgent(prompt, {
              model: options.model,
              weatherApi: options.weatherApi,
              captureContent: options.captureContent,
              agentName: 'weather-a2a',
            })
          ).text;
        } catch (error) {
          options.logger.error('agent run failed', { error: String(error) });
          text = `The weather agent failed: ${(error as Error).message}`;
        }
      }
      bus.publish({ kind: 'message', data: textMessage(Role.ROLE_AGENT, text, ctx.contextId) });
      bus.finished();
    },
    async cancelTask() {
      // One message per request: there is no running task to cancel.
    },
  };
}

/** The A2A server: JSON-RPC at `/`, the card at `/.well-known/agent-card.json`, `/ping`. */
export function createA2aApp(options: A2aAgentOptions): Express {
  const card = weatherAgentCard(options.publicUrl);
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), createWeatherExecutor(options));
  const app = express();
  app.get('/ping', (_req, res) => {
    res.json({ status: 'Healthy' });
  });
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => card }));
  app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  return app;
}

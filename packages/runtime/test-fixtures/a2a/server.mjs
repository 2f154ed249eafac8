// An A2A agent on the official A2A JavaScript SDK server (JSON-RPC at POST /, the card at
// /.well-known/agent-card.json, /ping). The card's URL is AGENTCORE_RUNTIME_URL, as on the hosted
// service, so clients that start from the card come back through the runtime. It answers
// "echo: <text> (pid <pid>, session <session header>)" and records the A2A-Version it was sent.
import { randomUUID } from 'node:crypto';
import { Role } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';
import express from 'express';

const port = Number(process.env.PORT ?? 9000);
const url = process.env.AGENTCORE_RUNTIME_URL ?? `http://127.0.0.1:${port}/`;
const card = {
  name: 'Echo agent',
  description: 'Echoes the text it is sent',
  supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
  provider: undefined,
  version: '1.0.0',
  capabilities: { streaming: true, pushNotifications: false, extensions: [] },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [
    {
      id: 'echo',
      name: 'Echo',
      description: 'Echoes',
      tags: ['echo'],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    },
  ],
  signatures: [],
};

let lastHeaders = {};
const executor = {
  async execute(ctx, bus) {
    const text = ctx.userMessage.parts
      .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
      .join('');
    if (text === 'crash') process.exit(3);
    bus.publish({
      kind: 'message',
      data: {
        messageId: randomUUID(),
        contextId: ctx.contextId,
        taskId: '',
        role: Role.ROLE_AGENT,
        parts: [
          {
            content: {
              $case: 'text',
              value: `echo: ${text} (pid ${process.pid}, session ${lastHeaders.session}, a2a-version ${lastHeaders.version})`,
            },
            metadata: undefined,
            filename: '',
            mediaType: 'text/plain',
          },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
    });
    bus.finished();
  },
  async cancelTask() {},
};

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
const app = express();
app.get('/ping', (_req, res) => res.json({ status: 'Healthy' }));
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => card }));
app.use((req, _res, next) => {
  lastHeaders = {
    session: req.headers['x-amzn-bedrock-agentcore-runtime-session-id'],
    version: req.headers['a2a-version'],
  };
  next();
});
app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.listen(port, '127.0.0.1');

// An AG-UI agent on the agentrt contract server (@agentrt/server, built dist): POST /invocations
// streams AG-UI events as SSE (RUN_STARTED, TEXT_MESSAGE_*, RUN_FINISHED) and GET /ws echoes
// frames after greeting with the session id it was given.
import { serve } from '@agentrt/server';

await serve(
  async function* run(input, context) {
    const threadId = input.threadId ?? 'thread-1';
    const runId = input.runId ?? 'run-1';
    yield { type: 'RUN_STARTED', threadId, runId };
    yield { type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant' };
    for (const word of ['hello', 'from', context.sessionId ?? 'no-session']) {
      await new Promise((r) => setTimeout(r, 50));
      yield { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: `${word} ` };
    }
    yield { type: 'TEXT_MESSAGE_END', messageId: 'm1' };
    yield { type: 'RUN_FINISHED', threadId, runId };
  },
  {
    host: '127.0.0.1',
    websocket: (socket, context) => {
      socket.send(JSON.stringify({ session: context.sessionId }));
      socket.on('message', (data, isBinary) => socket.send(data, { binary: isBinary }));
    },
  },
);

// A streaming agent run as a real child process by src/serve.test.ts (loads @agentrt/server's dist/).
// FRAMES: how many frames (-1: endless); GAP_MS: pause before each frame.
import { serve } from '@agentrt/server';

const frames = Number(process.env.FRAMES ?? 5);
const gapMs = Number(process.env.GAP_MS ?? 100);
const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

await serve(
  async function* (_payload, context) {
    for (let i = 0; frames < 0 || i < frames; i++) {
      await sleep(gapMs, context.signal);
      if (context.signal.aborted) return;
      yield { i };
    }
  },
  { onShutdown: () => process.stdout.write('{"msg":"onShutdown ran"}\n') },
);

// The contract server with an echo agent, for the throughput part of bench/instrument.
import { serve } from '@agentrt/server';

const running = await serve(async (payload) => ({ echo: payload }), {
  port: 0,
  host: '127.0.0.1',
});
process.stdout.write(`READY ${JSON.stringify({ port: running.port })}\n`);

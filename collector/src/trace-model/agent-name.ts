/**
 * Whose work a trace is. A call to a hosted agent enters through the hosting runtime, so its main
 * span is the runtime's (service `agentrt-runtime`, named InvokeAgentRuntime); the runtime names the
 * agent on that span, and the agent's name is what lists show.
 */
import type { SpanRecord } from '../wire-types.js';

/** The span attribute naming the runtime (the hosted agent) an AgentCore call went to. */
export const RUNTIME_NAME_ATTRIBUTE = 'aws.bedrock.agentcore.runtime.name';

/**
 * The hosted agent a main span is a call to (its runtime's name, as registered and invoked), or
 * undefined when the span is not a call to a hosted agent.
 */
export function hostedAgentOf(main: SpanRecord | undefined): string | undefined {
  const name = main?.attributes[RUNTIME_NAME_ATTRIBUTE];
  return typeof name === 'string' && name !== '' ? name : undefined;
}

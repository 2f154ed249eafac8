/**
 * The reference agents `agentrt dev` registers in the runtime, and the calls `--demo` sends: one
 * list each, which the stack, `agentrt dev --help` and the README describe.
 */

export interface ReferenceAgent {
  /** The runtime's name (what `agentrt invoke <name>` takes). */
  name: string;
  /** Its folder under examples/. */
  example: string;
  description: string;
  /** The agent's own `service.name` (OTEL_SERVICE_NAME in the runtime's environment). */
  serviceName: string;
  serverProtocol?: 'MCP' | 'A2A';
}

export const REFERENCE_AGENTS: readonly ReferenceAgent[] = [
  {
    name: 'sdk_agent',
    example: 'sdk-agent',
    description: 'SDK-integration example on @agentrt/server',
    serviceName: 'sdk-agent',
  },
  {
    name: 'custom_agent',
    example: 'custom-agent',
    description: 'Custom agent on plain Koa with the agentContext() middleware',
    serviceName: 'custom-agent',
  },
  {
    name: 'weather_mcp',
    example: 'mcp-server',
    description: 'Weather MCP server (official MCP SDK): get_forecast, get_alerts',
    serviceName: 'mcp-server',
    serverProtocol: 'MCP',
  },
  {
    name: 'weather_a2a',
    example: 'a2a-agent',
    description: 'Weather agent behind the official A2A SDK server',
    serviceName: 'a2a-agent',
    serverProtocol: 'A2A',
  },
];

/** The kinds of call `--demo` sends, in order, and how many of each. */
export const DEMO_CALLS: readonly { kind: string; calls: number }[] = [
  { kind: 'single', calls: 1 },
  { kind: 'streaming', calls: 1 },
  { kind: 'multi-turn', calls: 2 },
  { kind: 'weather question', calls: 1 },
  { kind: 'failing tool', calls: 1 },
  { kind: 'A2A message', calls: 1 },
  { kind: 'MCP tool call', calls: 1 },
];

import { pathToFileURL } from 'node:url';
import { createRuntimeClient, type RuntimeSpec } from '@agentrt/runtime';

/** A reference agent to register in the hosting runtime. */
export interface AgentRegistration {
  /** Runtime name (`[a-zA-Z][a-zA-Z0-9_]{0,47}`), e.g. `sdk_agent`. */
  name: string;
  /** Absolute folder of the agent; registered as a `file://` container URI. */
  dir: string;
  description: string;
  environmentVariables?: Record<string, string>;
  /** `protocolConfiguration.serverProtocol` (default HTTP). */
  serverProtocol?: 'HTTP' | 'MCP' | 'A2A' | 'AGUI';
}

export interface RegisteredRuntime {
  name: string;
  id: string;
  arn: string;
  version: string;
  /** True when it existed already (a second `agentrt dev` start). */
  reused: boolean;
}

/**
 * Makes sure each agent is a READY runtime, through the runtime's own AWS-compatible control plane.
 * Idempotent: an existing runtime of the same name is reused, and updated (a new version) only when
 * its folder or environment changed or it failed, so a second start keeps the ids and ARNs of the first.
 */
export async function registerAgents(
  endpoint: string,
  agents: readonly AgentRegistration[],
  timeoutMs = 60_000,
): Promise<RegisteredRuntime[]> {
  const client = createRuntimeClient({ url: endpoint });
  const existing = await client.list();
  const registered: RegisteredRuntime[] = [];
  for (const agent of agents) {
    const spec: RuntimeSpec = {
      containerUri: pathToFileURL(agent.dir).href,
      description: agent.description,
      environmentVariables: agent.environmentVariables ?? {},
      serverProtocol: agent.serverProtocol ?? 'HTTP',
    };
    const found = existing.find((r) => r.agentRuntimeName === agent.name);
    let id: string;
    if (found) {
      id = found.agentRuntimeId;
      const current = await client.get(id);
      const sameUri =
        current.agentRuntimeArtifact?.containerConfiguration?.containerUri === spec.containerUri;
      const sameEnv =
        JSON.stringify(current.environmentVariables ?? {}) === JSON.stringify(spec.environmentVariables);
      const protocol = (current.protocolConfiguration as { serverProtocol?: string } | undefined)
        ?.serverProtocol;
      const sameProtocol = (protocol ?? 'HTTP') === spec.serverProtocol;
      if (!sameUri || !sameEnv || !sameProtocol || current.status.endsWith('FAILED'))
        await client.update(id, spec);
    } else {
      id = (await client.create(agent.name, spec)).agentRuntimeId;
    }
    const ready = await client.waitSettled(id, timeoutMs);
    if (ready.status !== 'READY') {
      throw new Error(
        `runtime ${agent.name} is ${ready.status}: ${ready.failureReason ?? 'no reason given'}`,
      );
    }
    registered.push({
      name: agent.name,
      id,
      arn: ready.agentRuntimeArn,
      version: ready.agentRuntimeVersion,
      reused: Boolean(found),
    });
  }
  return registered;
}

import { setTimeout as delay } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { callJson } from './http.js';

/** A reference agent to register in the hosting runtime. */
export interface AgentRegistration {
  /** Runtime name (`[a-zA-Z][a-zA-Z0-9_]{0,47}`), e.g. `sdk_agent`. */
  name: string;
  /** Absolute folder of the agent; registered as a `file://` container URI. */
  dir: string;
  description: string;
  environmentVariables?: Record<string, string>;
}

export interface RegisteredRuntime {
  name: string;
  id: string;
  arn: string;
  version: string;
  /** True when it existed already (a second `agentrt dev` start). */
  reused: boolean;
}

interface RuntimeSummary {
  agentRuntimeName: string;
  agentRuntimeId: string;
  agentRuntimeArn: string;
  agentRuntimeVersion: string;
  status: string;
}

interface RuntimeDetail extends RuntimeSummary {
  failureReason?: string;
  agentRuntimeArtifact?: { containerConfiguration?: { containerUri?: string } };
  environmentVariables?: Record<string, string>;
}

const DEV_ROLE_ARN = 'arn:aws:iam::123456789012:role/agentrt-dev';

async function listRuntimes(endpoint: string): Promise<RuntimeSummary[]> {
  const all: RuntimeSummary[] = [];
  let nextToken: string | undefined;
  do {
    const query = new URLSearchParams({ maxResults: '100', ...(nextToken ? { nextToken } : {}) });
    const page = await callJson<{ agentRuntimes: RuntimeSummary[]; nextToken?: string }>(
      'POST',
      `${endpoint}/runtimes/?${query}`,
    );
    all.push(...page.agentRuntimes);
    nextToken = page.nextToken;
  } while (nextToken);
  return all;
}

async function waitReady(endpoint: string, id: string, timeoutMs: number): Promise<RuntimeDetail> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runtime = await callJson<RuntimeDetail>('GET', `${endpoint}/runtimes/${encodeURIComponent(id)}/`);
    if (runtime.status === 'READY') return runtime;
    if (runtime.status.endsWith('FAILED')) {
      throw new Error(
        `runtime ${runtime.agentRuntimeName} is ${runtime.status}: ${runtime.failureReason ?? 'no reason given'}`,
      );
    }
    if (Date.now() > deadline)
      throw new Error(`runtime ${runtime.agentRuntimeName} is still ${runtime.status}`);
    await delay(100);
  }
}

/**
 * Makes sure each agent is a READY runtime, through the runtime's own AWS-compatible control plane.
 * Idempotent: an existing runtime of the same name is reused, and updated (a new version) only when
 * its folder or environment changed, so a second start keeps the ids, ARNs and sessions of the first.
 */
export async function registerAgents(
  endpoint: string,
  agents: readonly AgentRegistration[],
  timeoutMs = 60_000,
): Promise<RegisteredRuntime[]> {
  const existing = await listRuntimes(endpoint);
  const registered: RegisteredRuntime[] = [];
  for (const agent of agents) {
    const containerUri = pathToFileURL(agent.dir).href;
    const environmentVariables = agent.environmentVariables ?? {};
    const artifact = { containerConfiguration: { containerUri } };
    const found = existing.find((r) => r.agentRuntimeName === agent.name);
    let id: string;
    let reused = false;
    if (found) {
      id = found.agentRuntimeId;
      reused = true;
      const current = await callJson<RuntimeDetail>('GET', `${endpoint}/runtimes/${encodeURIComponent(id)}/`);
      const sameUri = current.agentRuntimeArtifact?.containerConfiguration?.containerUri === containerUri;
      const sameEnv =
        JSON.stringify(current.environmentVariables ?? {}) === JSON.stringify(environmentVariables);
      if (!sameUri || !sameEnv || current.status.endsWith('FAILED')) {
        await callJson('PUT', `${endpoint}/runtimes/${encodeURIComponent(id)}/`, {
          agentRuntimeArtifact: artifact,
          roleArn: DEV_ROLE_ARN,
          description: agent.description,
          networkConfiguration: { networkMode: 'PUBLIC' },
          environmentVariables,
        });
      }
    } else {
      const created = await callJson<{ agentRuntimeId: string }>('PUT', `${endpoint}/runtimes/`, {
        agentRuntimeName: agent.name,
        agentRuntimeArtifact: artifact,
        roleArn: DEV_ROLE_ARN,
        description: agent.description,
        networkConfiguration: { networkMode: 'PUBLIC' },
        environmentVariables,
      });
      id = created.agentRuntimeId;
    }
    const ready = await waitReady(endpoint, id, timeoutMs);
    registered.push({
      name: agent.name,
      id,
      arn: ready.agentRuntimeArn,
      version: ready.agentRuntimeVersion,
      reused,
    });
  }
  return registered;
}

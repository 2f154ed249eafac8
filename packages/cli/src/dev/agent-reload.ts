// The dev stack's hot reload of its reference agents: the reloader (hot-reload.ts) on each agent's
// folder, its lines in the terminal, and each reload or failed build as a log record of the
// service `agentrt-dev` in the collector — where the Inspector shows a failed build of the runtime
// it talks to.
import { join } from 'node:path';
import { createRuntimeClient } from '@agentrt/runtime';
import { type ReloadEvent, startHotReload } from './hot-reload.js';
import { REFERENCE_AGENTS } from './reference-agents.js';
import type { RegisteredRuntime } from './runtime-registration.js';

/** The log record attributes the Inspector reads. */
export const BUILD_EVENT_ATTRIBUTES = {
  runtimeArn: 'agentrt.dev.runtime.arn',
  status: 'agentrt.dev.build.status',
} as const;

/** A reload event as an OTLP/JSON logs request (service `agentrt-dev`). */
export function buildEventLogs(event: ReloadEvent, nowMs = Date.now()): unknown {
  const attribute = (key: string, value: string) => ({ key, value: { stringValue: value } });
  return {
    resourceLogs: [
      {
        resource: { attributes: [attribute('service.name', 'agentrt-dev')] },
        scopeLogs: [
          {
            scope: { name: 'agentrt-dev' },
            logRecords: [
              {
                timeUnixNano: String(BigInt(nowMs) * 1_000_000n),
                severityNumber: event.status === 'failed' ? 17 : 9,
                severityText: event.status === 'failed' ? 'ERROR' : 'INFO',
                body: {
                  stringValue: `${event.agent}: ${event.status === 'failed' ? 'build failed: ' : ''}${event.message}`,
                },
                attributes: [
                  attribute('agentrt.dev.runtime.name', event.agent),
                  attribute(BUILD_EVENT_ATTRIBUTES.runtimeArn, event.arn),
                  attribute(BUILD_EVENT_ATTRIBUTES.status, event.status),
                ],
              },
            ],
          },
        ],
      },
    ],
  };
}

export async function startAgentReload(o: {
  repoRoot: string;
  runtimes: readonly RegisteredRuntime[];
  runtimeUrl: string;
  collectorUrl: string;
  stdout: (text: string) => void;
}): Promise<{ close(): void }> {
  const agents = o.runtimes.flatMap((r) => {
    const agent = REFERENCE_AGENTS.find((a) => a.name === r.name);
    return agent ? [{ name: r.name, arn: r.arn, dir: join(o.repoRoot, 'examples', agent.example) }] : [];
  });
  return startHotReload({
    agents,
    runtime: createRuntimeClient({ url: o.runtimeUrl }),
    log: o.stdout,
    onEvent: reportToCollector(o.collectorUrl),
  });
}

/** Sends each reload event to the collector as a log record (buildEventLogs). */
export function reportToCollector(collectorUrl: string): (event: ReloadEvent) => void {
  return (event) => {
    fetch(`${collectorUrl}/v1/logs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(buildEventLogs(event)),
    }).catch(() => {
      // The collector stopping with the stack: the terminal has the line already.
    });
  };
}

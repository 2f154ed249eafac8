// Re-running a dataset item's input through a runtime: one invoke in a new session, its answer
// drained, then the session's spans awaited in the collector — the agent's own spans there (a
// service besides the runtime's; a batching exporter sends them seconds after the answer) and the
// span count steady over two polls — and the session stopped.
import { randomUUID } from 'node:crypto';
import type { DatasetItem } from '@agentrt/runtime';
import { createRuntimeClient } from '@agentrt/runtime';
import type { QueryResponse } from '@agentrt/collector';
import { collectorJson } from '../collector-client.js';

export interface RerunTarget {
  runtimeUrl: string;
  /** Runtime name, id or ARN. */
  agent: string;
  collectorUrl: string;
  apiKey?: string;
  waitSeconds: number;
}

const POLL_MS = 1000;
/** Services whose spans in a session are not the agent's own. */
const NOT_THE_AGENT = new Set(['agentrt-runtime', 'agentrt-evaluation']);

/**
 * The session's span count once the agent's own spans are in; else undefined. Counted by the query
 * language over the spans themselves (a session summary is rebuilt in the background and may lag).
 */
async function settledSpans(base: string, sessionId: string): Promise<number | undefined> {
  const query = `filter attributes.session.id = ${JSON.stringify(sessionId)} | stats count(*) as n by resource.attributes.service.name as service`;
  const out = await collectorJson<QueryResponse>(base, '/api/query', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const agent = out.rows.some((r) => !NOT_THE_AGENT.has(String(r.service)));
  return agent ? out.rows.reduce((sum, r) => sum + Number(r.n), 0) : undefined;
}

/** A re-runner for `runBatch`: resolves to the new session's id once its spans are stored. */
export function createRerun(target: RerunTarget): (item: DatasetItem) => Promise<string> {
  const client = createRuntimeClient({
    url: target.runtimeUrl,
    ...(target.apiKey ? { apiKey: target.apiKey } : {}),
  });
  const arn = client.resolve(target.agent).then((r) => r.agentRuntimeArn);
  return async (item) => {
    const sessionId = `eval-${item.id.replace(/[^a-zA-Z0-9-]/g, '-').slice(0, 40)}-${randomUUID()}`;
    const runtimeArn = await arn;
    const res = await client.invoke(runtimeArn, JSON.stringify(item.input), { sessionId });
    for await (const chunk of res.body) void chunk; // the answer itself is judged from the spans
    const deadline = Date.now() + target.waitSeconds * 1000;
    let last: number | undefined;
    for (;;) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      const now = await settledSpans(target.collectorUrl, res.sessionId);
      if (now !== undefined && now === last) break;
      last = now;
      if (Date.now() > deadline)
        throw new Error(
          `the spans of session ${res.sessionId} did not reach the collector in ${target.waitSeconds} s`,
        );
    }
    await client.stopSession(runtimeArn, res.sessionId); // frees its worker
    return res.sessionId;
  };
}

import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { InvokeAgentRuntimeCommand, StopRuntimeSessionCommand } from '@aws-sdk/client-bedrock-agentcore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type TestRuntime, createReady, sessionId, startRuntime, waitFor } from '../test-support.js';

// OTLP/JSON as the SDK's http exporters send it (the fields these tests read).
interface KeyValue {
  key: string;
  value: { stringValue?: string; boolValue?: boolean; intValue?: string | number };
}
interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  status?: { code?: number };
  attributes: KeyValue[];
}
interface JsonDataPoint {
  attributes: KeyValue[];
  asInt?: string | number;
  asDouble?: number;
  count?: string | number;
  bucketCounts?: (string | number)[];
}
interface JsonMetric {
  name: string;
  unit?: string;
  sum?: { dataPoints: JsonDataPoint[]; aggregationTemporality: number };
  gauge?: { dataPoints: JsonDataPoint[] };
  histogram?: { dataPoints: JsonDataPoint[] };
}
interface JsonLog {
  severityText?: string;
  traceId?: string;
  spanId?: string;
  body?: { stringValue?: string };
  attributes: KeyValue[];
}

const attr = (list: KeyValue[], key: string) => {
  const v = list.find((a) => a.key === key)?.value;
  return v?.stringValue ?? v?.boolValue ?? (v?.intValue !== undefined ? Number(v.intValue) : undefined);
};

describe('the runtime observes itself (spans, AgentCore metrics, logs as OTLP)', () => {
  let rt: TestRuntime;
  let receiver: Server;
  const spans: JsonSpan[] = [];
  const metricBatches: JsonMetric[][] = [];
  const logs: JsonLog[] = [];
  const services = new Set<string>();

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        const doc = JSON.parse(body) as Record<string, { resource?: { attributes: KeyValue[] } }[]>;
        for (const list of Object.values(doc))
          for (const r of list) services.add(String(attr(r.resource?.attributes ?? [], 'service.name')));
        if (req.url === '/v1/traces')
          for (const r of doc.resourceSpans as unknown as { scopeSpans: { spans: JsonSpan[] }[] }[])
            for (const s of r.scopeSpans) spans.push(...s.spans);
        if (req.url === '/v1/metrics')
          for (const r of doc.resourceMetrics as unknown as { scopeMetrics: { metrics: JsonMetric[] }[] }[])
            metricBatches.push(r.scopeMetrics.flatMap((s) => s.metrics));
        if (req.url === '/v1/logs')
          for (const r of doc.resourceLogs as unknown as { scopeLogs: { logRecords: JsonLog[] }[] }[])
            for (const s of r.scopeLogs) logs.push(...s.logRecords);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    rt = await startRuntime({
      otlpEndpoint: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
      otlpProtocol: 'http/json',
      metricExportIntervalMs: 300,
    });
  });
  afterAll(async () => {
    await rt?.close();
    await new Promise<void>((r) => receiver.close(() => r()));
  }, 30_000);

  /** The latest cumulative value of a counter's point for `Operation=InvokeAgentRuntime` on `arn`. */
  const latest = (name: string, arn: string, operation = 'InvokeAgentRuntime'): number | undefined => {
    for (let i = metricBatches.length - 1; i >= 0; i--) {
      const metric = metricBatches[i]!.find((m) => m.name === name);
      const point = metric?.sum?.dataPoints.find(
        (p) => attr(p.attributes, 'Resource') === arn && attr(p.attributes, 'Operation') === operation,
      );
      if (point) return Number(point.asInt ?? point.asDouble);
    }
    return undefined;
  };

  it('continues the caller trace with an InvokeAgentRuntime SERVER span that parents the worker, with metrics and logs', async () => {
    const runtime = await createReady(rt.control, 'observed', 'counter');
    const arn = runtime.agentRuntimeArn!;
    const sid = sessionId('observed');
    const callerTrace = '0af7651916cd43dd8448eb211c80319c';
    const callerSpan = 'b7ad6b7169203331';
    const invoke = async (payload: unknown) => {
      const out = await rt.data.send(
        new InvokeAgentRuntimeCommand({
          agentRuntimeArn: arn,
          runtimeSessionId: sid,
          contentType: 'application/json',
          traceParent: `00-${callerTrace}-${callerSpan}-01`,
          baggage: 'tenant=acme',
          payload: new TextEncoder().encode(JSON.stringify(payload)),
        }),
      );
      return JSON.parse(await out.response!.transformToString()) as { headers: Record<string, string> };
    };
    const first = await invoke({});
    await invoke({});
    // ActiveSessionCount is observed while the session lives: a collection (every 300 ms) must see
    // it before the stop (on a fast machine both invocations take less than that)
    await waitFor(
      () => metricBatches.flat().some((m) => m.name === 'ActiveSessionCount'),
      10_000,
      'ActiveSessionCount',
    );
    await rt.data.send(new StopRuntimeSessionCommand({ agentRuntimeArn: arn, runtimeSessionId: sid }));

    // Batches go out a second apart: wait for the last call's span too.
    await waitFor(
      () =>
        spans.filter((s) => s.name === 'InvokeAgentRuntime').length >= 2 &&
        spans.some((s) => s.name === 'StopRuntimeSession'),
      10_000,
      'spans',
    );
    const invocations = spans.filter((s) => s.name === 'InvokeAgentRuntime');
    for (const span of invocations) {
      expect(span.traceId).toBe(callerTrace);
      expect(span.parentSpanId).toBe(callerSpan);
      expect(span.kind).toBe(2); // SERVER
      expect(attr(span.attributes, 'session.id')).toBe(sid);
      expect(attr(span.attributes, 'aws.bedrock.agentcore.runtime.arn')).toBe(arn);
      expect(attr(span.attributes, 'aws.bedrock.agentcore.runtime.qualifier')).toBe('DEFAULT');
      expect(attr(span.attributes, 'aws.bedrock.agentcore.runtime.version')).toBe('1');
      expect(attr(span.attributes, 'aws.bedrock.agentcore.runtime.protocol')).toBe('HTTP');
      expect(attr(span.attributes, 'http.response.status_code')).toBe(200);
    }
    expect(invocations.map((s) => attr(s.attributes, 'agentrt.cold_start')).sort()).toEqual([false, true]);
    const cold = invocations.find((s) => attr(s.attributes, 'agentrt.cold_start') === true)!;
    // The worker was called with the runtime span as its parent (traceparent) and the caller's baggage.
    expect(first.headers.traceparent).toBe(`00-${callerTrace}-${cold.spanId}-01`);
    expect(first.headers.baggage).toContain('tenant=acme');
    expect(first.headers.baggage).toContain(`session.id=${sid}`);
    const start = spans.find((s) => s.name === 'StartSession')!;
    expect(start.parentSpanId).toBe(cold.spanId);
    const phases = spans.filter((s) => s.parentSpanId === start.spanId).map((s) => s.name);
    expect(phases).toEqual(expect.arrayContaining(['spawn', 'readiness']));
    expect(spans.find((s) => s.name === 'StopRuntimeSession')?.traceId).toBeDefined();
    expect(spans.find((s) => s.name === 'CreateAgentRuntime')).toBeDefined();
    expect(services).toEqual(new Set(['agentrt-runtime']));

    // AgentCore's metrics with their names and dimensions (cumulative counters).
    await waitFor(() => latest('Invocations', arn) === 2, 10_000, 'Invocations = 2');
    expect(latest('Invocations', arn, 'StopRuntimeSession')).toBe(1);
    expect(latest('UserErrors', arn)).toBe(0);
    expect(latest('SessionCount', arn)).toBe(1);
    const names = new Set(metricBatches.flat().map((m) => m.name));
    for (const name of ['Throttles', 'SystemErrors', 'TotalErrors', 'Latency', 'ActiveSessionCount'])
      expect(names).toContain(name);
    const latency = metricBatches
      .flat()
      .filter((m) => m.name === 'Latency')
      .at(-1)!;
    expect(latency.unit).toBe('ms');
    const invokeLatency = latency.histogram!.dataPoints.find(
      (p) => attr(p.attributes, 'Operation') === 'InvokeAgentRuntime',
    )!;
    expect(Number(invokeLatency.count)).toBe(2);
    expect(attr(invokeLatency.attributes, 'Name')).toBe('observed::DEFAULT');

    // Worker output and the runtime's own records, with the session and the invocation's trace.
    await waitFor(
      () =>
        logs.some((l) => l.body?.stringValue === 'invocation 2' && attr(l.attributes, 'session.id') === sid),
      10_000,
      'worker log line',
    );
    const line = logs.find((l) => l.body?.stringValue === 'invocation 2')!;
    expect(line.traceId).toBe(callerTrace);
    expect(invocations.map((s) => s.spanId)).toContain(line.spanId);
    expect(line.severityText).toBe('INFO');
    // A structured logger's JSON line: its message, level (pino's 40) and fields, not the raw JSON.
    await waitFor(() => logs.some((l) => l.body?.stringValue === 'count is 2'), 10_000, 'structured line');
    const structured = logs.find((l) => l.body?.stringValue === 'count is 2')!;
    expect(structured.severityText).toBe('WARN');
    expect(attr(structured.attributes, 'count')).toBe(2);
    expect(attr(structured.attributes, 'stream')).toBe('stderr');
    expect(structured.traceId).toBe(callerTrace);
    expect(logs.filter((l) => l.body?.stringValue?.startsWith('{'))).toEqual([]);
  });

  it('counts container failures as UserErrors and reports per-session CPU and memory', async () => {
    const runtime = await createReady(rt.control, 'failing', 'crashing');
    const arn = runtime.agentRuntimeArn!;
    const sid = sessionId('failing');
    const send = (payload: unknown) =>
      rt.data.send(
        new InvokeAgentRuntimeCommand({
          agentRuntimeArn: arn,
          runtimeSessionId: sid,
          payload: new TextEncoder().encode(JSON.stringify(payload)),
        }),
      );
    await send({});
    await expect(send({ fail: true })).rejects.toMatchObject({ name: 'RuntimeClientError' });
    await waitFor(() => latest('UserErrors', arn) === 1, 10_000, 'UserErrors = 1');
    expect(latest('Invocations', arn)).toBe(2);
    expect(latest('TotalErrors', arn)).toBe(1);
    expect(latest('SystemErrors', arn)).toBe(0);
    const isFailed = (s: JsonSpan) =>
      s.name === 'InvokeAgentRuntime' && attr(s.attributes, 'error.type') === 'RuntimeClientError';
    await waitFor(() => spans.some(isFailed), 10_000, 'the failed call span');
    const failed = spans.find(isFailed);
    expect(failed?.status?.code).toBe(2);
    expect(attr(failed!.attributes, 'http.response.status_code')).toBe(424);

    const usage = (name: string) => {
      for (let i = metricBatches.length - 1; i >= 0; i--) {
        const metric = metricBatches[i]!.find((m) => m.name === name);
        const point = (metric?.sum ?? metric?.gauge)?.dataPoints.find(
          (p) => attr(p.attributes, 'session.id') === sid,
        );
        if (point) return Number(point.asInt ?? point.asDouble);
      }
      return undefined;
    };
    await waitFor(() => (usage('agent.runtime.memory.used') ?? 0) > 1_000_000, 10_000, 'session memory');
    await waitFor(() => (usage('agent.runtime.vcpu.seconds.used') ?? 0) > 0, 10_000, 'session CPU time');
    await waitFor(() => (usage('agent.runtime.memory.gb_hours.used') ?? 0) > 0, 10_000, 'session GB-hours');
  });

  it("counts an MCP client's GET stream (answered 405) under its runtime's Name, never a nameless one", async () => {
    const runtime = await createReady(rt.control, 'mcp_named', 'mcp', {
      protocolConfiguration: { serverProtocol: 'MCP' },
    });
    const arn = runtime.agentRuntimeArn!;
    const res = await fetch(`${rt.server.url}/runtimes/${encodeURIComponent(arn)}/invocations`, {
      headers: { accept: 'text/event-stream' },
    });
    expect(res.status).toBe(405);
    await waitFor(() => latest('Invocations', arn) === 1, 10_000, 'Invocations of mcp_named = 1');
    const points = metricBatches.flat().flatMap((m) => m.sum?.dataPoints ?? []);
    const named = points.filter((p) => attr(p.attributes, 'Resource') === arn);
    expect(named.every((p) => attr(p.attributes, 'Name') === 'mcp_named::DEFAULT')).toBe(true);
  });

  it('gives each WebSocket connection a SERVER span: caller trace (header or query), session, close code, frames', async () => {
    const runtime = await createReady(rt.control, 'observed_ws', 'ws-echo');
    const arn = runtime.agentRuntimeArn!;
    const base = `${rt.server.url.replace('http', 'ws')}/runtimes/${encodeURIComponent(arn)}/ws`;
    const sid = sessionId('observed-ws');
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    /** Connects, sends `frames`, reads the hello and the echoes, then `close:<code>` or closes itself. */
    const converse = async (
      url: string,
      headers: Record<string, string>,
      frames: string[],
      finish: () => void,
    ) => {
      const socket = new WebSocket(url, { headers });
      const received: string[] = [];
      const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
      socket.on('message', (data: Buffer) => {
        received.push(data.toString('utf8'));
        if (received.length === frames.length + 1) finish.call(socket);
      });
      await new Promise((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      for (const frame of frames) socket.send(frame);
      return { code: await closed, hello: JSON.parse(received[0]!) as { headers: Record<string, string> } };
    };
    const byClient = await converse(
      base,
      {
        'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': sid,
        traceparent: `00-${callerTrace}-${callerSpan}-01`,
      },
      ['one', 'two'],
      function (this: WebSocket) {
        this.close(4001, 'done');
      },
    );
    expect(byClient.code).toBe(4001);
    const queryTrace = '5bf92f3577b34da6a3ce929d0e0e4736';
    const byContainer = await converse(
      `${base}?X-Amzn-Bedrock-AgentCore-Runtime-Session-Id=${sid}&traceparent=00-${queryTrace}-${callerSpan}-01`,
      {},
      ['close:4002'],
      () => undefined,
    );
    expect(byContainer.code).toBe(4002);
    const refused = new WebSocket(`${base}?qualifier=nope`, {
      headers: { 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id': sid },
    });
    await new Promise((resolve) => {
      refused.on('unexpected-response', resolve);
      refused.on('error', () => undefined);
    });

    const isWs = (s: JsonSpan) => s.name === 'InvokeAgentRuntimeWithWebSocketStream';
    await waitFor(() => spans.filter(isWs).length >= 3, 10_000, 'three WebSocket spans');
    const first = spans.find((s) => isWs(s) && s.traceId === callerTrace)!;
    expect(first.kind).toBe(2); // SERVER
    expect(first.parentSpanId).toBe(callerSpan);
    expect(attr(first.attributes, 'session.id')).toBe(sid);
    expect(attr(first.attributes, 'aws.bedrock.agentcore.runtime.arn')).toBe(arn);
    expect(attr(first.attributes, 'http.response.status_code')).toBe(101);
    expect(attr(first.attributes, 'agentrt.websocket.close_code')).toBe(4001);
    expect(attr(first.attributes, 'agentrt.websocket.closed_by')).toBe('client');
    expect(attr(first.attributes, 'agentrt.websocket.frames_in')).toBe(2);
    expect(attr(first.attributes, 'agentrt.websocket.frames_out')).toBe(3); // hello + two echoes
    expect(attr(first.attributes, 'agentrt.cold_start')).toBe(true);
    expect(first.status?.code ?? 0).toBe(0);
    // The container's side of the connection is a child of the runtime's span.
    expect(byClient.hello.headers.traceparent).toBe(`00-${callerTrace}-${first.spanId}-01`);

    const second = spans.find((s) => isWs(s) && s.traceId === queryTrace)!;
    expect(second.parentSpanId).toBe(callerSpan);
    expect(attr(second.attributes, 'agentrt.websocket.close_code')).toBe(4002);
    expect(attr(second.attributes, 'agentrt.websocket.closed_by')).toBe('container');
    expect(attr(second.attributes, 'agentrt.websocket.frames_in')).toBe(1);
    expect(attr(second.attributes, 'agentrt.cold_start')).toBe(false);
    expect(byContainer.hello.headers.traceparent).toBe(`00-${queryTrace}-${second.spanId}-01`);

    const failed = spans.find((s) => isWs(s) && attr(s.attributes, 'http.response.status_code') === 404)!;
    expect(failed.status?.code).toBe(2);
    expect(attr(failed.attributes, 'error.type')).toBe('ResourceNotFoundException');
  });
});

import { describe, expect, it } from 'vitest';
import type { Attributes, SpanNode } from '../wire-types.js';
import { NotReplayable, replayRequestOf } from './replay.js';

const TRACE = 'ab'.repeat(16);
const node = (name: string, attributes: Attributes, children: SpanNode[] = []): SpanNode => ({
  span: {
    resource: { attributes: {} },
    scope: { name: 't' },
    traceId: TRACE,
    spanId: name === 'root' ? '00000000000000a1' : '00000000000000b2',
    name,
    kind: 'SERVER',
    startTimeUnixNano: 1,
    endTimeUnixNano: 2,
    durationNano: 1,
    attributes,
    status: { code: 'UNSET' },
    events: [],
    links: [],
  },
  logs: [],
  children,
});
const ARN = 'arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/a-0123456789';
const invocation = (extra: Attributes) =>
  node('InvokeAgentRuntime', {
    'rpc.method': 'InvokeAgentRuntime',
    'aws.bedrock.agentcore.runtime.arn': ARN,
    ...extra,
  });

describe('replayRequestOf', () => {
  it('reads the recorded request of the outermost invocation, base64 payloads decoded', () => {
    const roots = [
      node('root', {}, [
        invocation({
          'agentrt.request.payload': Buffer.from([0, 255, 1]).toString('base64'),
          'agentrt.request.payload_encoding': 'base64',
          'agentrt.request.content_type': 'application/octet-stream',
          'session.id': 's'.repeat(33),
          'aws.bedrock.agentcore.runtime.qualifier': 'prod',
          'agentrt.request.header.x-amzn-bedrock-agentcore-runtime-custom-a': 'b',
        }),
      ]),
    ];
    const r = replayRequestOf(TRACE, roots);
    expect([...r.payload]).toEqual([0, 255, 1]);
    expect(r).toMatchObject({
      spanId: '00000000000000b2',
      runtimeArn: ARN,
      qualifier: 'prod',
      sessionId: 's'.repeat(33),
      contentType: 'application/octet-stream',
      headers: { 'x-amzn-bedrock-agentcore-runtime-custom-a': 'b' },
    });
    expect(r).not.toHaveProperty('accept');
  });

  it('says why a trace cannot be replayed', () => {
    expect(() => replayRequestOf(TRACE, [node('root', {})])).toThrow(NotReplayable);
    expect(() => replayRequestOf(TRACE, [invocation({})])).toThrow(/AGENTRT_CAPTURE_REQUESTS=1/);
    expect(() =>
      replayRequestOf(TRACE, [
        invocation({ 'agentrt.request.payload_truncated': true, 'agentrt.request.payload_bytes': 70000 }),
      ]),
    ).toThrow(/70000 bytes\) was larger than the runtime records/);
  });
});

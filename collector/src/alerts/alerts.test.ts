/**
 * Cost alerts on a real collector: model-call spans exported by the official OTel exporter cross a
 * rule's threshold for one session; a real local webhook receiver gets exactly one firing within
 * 5 s of the crossing span's export, none for a session under the threshold, a resolution once the
 * window ages out, and a new firing after it. Malformed rules are refused naming the field.
 */
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { type Server, createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Collector, createCollector } from '../http/collector.js';
import type { AlertEvent } from './engine.js';
import { silentLogger } from '../logger.js';

let dir: string;
let collector: Collector;
let receiver: Server;
let hookUrl: string;
const received: { at: number; event: AlertEvent }[] = [];
let provider: BasicTracerProvider;

/** One model call of `session` using `tokens` (input + output), exported and acknowledged. */
async function modelCall(session: string, tokens: number, user = 'u-1'): Promise<number> {
  const tracer = provider.getTracer('alerts-test');
  const span = tracer.startSpan(
    'chat claude-sonnet',
    {
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'claude-sonnet',
        'gen_ai.usage.input_tokens': tokens - 10,
        'gen_ai.usage.output_tokens': 10,
        'session.id': session,
        'user.id': user,
      },
    },
    ROOT_CONTEXT,
  );
  span.end();
  await provider.forceFlush();
  return Date.now();
}

const rulesPost = (body: unknown) =>
  fetch(`${collector.url}/api/alerts/rules`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const eventsOf = (rule: string, status?: string) =>
  received.filter((r) => r.event.rule === rule && (!status || r.event.status === status));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentrt-alerts-'));
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ at: Date.now(), event: JSON.parse(body) as AlertEvent });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const address = receiver.address();
  hookUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;
  collector = await createCollector({ dataDir: dir, host: '127.0.0.1', port: 0 });
  provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'alerted-agent' }),
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${collector.url}/v1/traces` }))],
  });
});
afterAll(async () => {
  await provider?.shutdown();
  await collector?.close();
  receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('cost alerts', () => {
  it('refuses malformed rules, naming the field', async () => {
    const rule = { name: 'r', measure: 'tokens', threshold: 10, windowSeconds: 60, webhook: hookUrl };
    const cases: [unknown, string][] = [
      [{}, 'rules must be an array'],
      [{ rules: [{ ...rule, measure: 'euros' }] }, "rules[0].measure must be 'tokens' or 'usd'"],
      [{ rules: [{ ...rule, threshold: -1 }] }, 'rules[0].threshold must be a number above 0'],
      [{ rules: [{ ...rule, windowSeconds: '60' }] }, 'rules[0].windowSeconds must be a number above 0'],
      [{ rules: [{ ...rule, webhook: 'file:///etc/passwd' }] }, 'rules[0].webhook must be an http(s) URL'],
      [{ rules: [{ ...rule, name: 'a b' }] }, 'rules[0].name must be 1-64 letters'],
      [{ rules: [{ ...rule, where: { 'user.id': 7 } }] }, 'rules[0].where.user.id must be a string'],
      [{ rules: [{ ...rule, colour: 'red' }] }, 'rules[0].colour is not a rule field'],
      [{ rules: [rule, rule] }, "rules[1].name 'r' is used twice"],
      [{ rules: Array.from({ length: 201 }, (_, i) => ({ ...rule, name: `r${i}` })) }, 'more than 200 rules'],
    ];
    for (const [body, message] of cases) {
      const res = await rulesPost(body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(((await res.json()) as { message: string }).message).toContain(message);
    }
    const notJson = await fetch(`${collector.url}/api/alerts/rules`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"rules": [',
    });
    expect(notJson.status).toBe(400);
    expect(((await (await fetch(`${collector.url}/api/alerts`)).json()) as { rules: [] }).rules).toEqual([]);
  });

  it('fires once per window to the webhook within 5 s of the crossing span, then resolves', async () => {
    const res = await rulesPost({
      rules: [
        { name: 'session-tokens', measure: 'tokens', threshold: 100, windowSeconds: 3, webhook: hookUrl },
        {
          name: 'user-usd',
          measure: 'usd',
          threshold: 1000,
          windowSeconds: 60,
          groupBy: 'user.id',
          webhook: hookUrl,
        },
      ],
    });
    expect(res.status).toBe(200);
    // Kept across restarts in the data dir.
    expect(JSON.parse(readFileSync(join(dir, 'alert-rules.json'), 'utf8')).rules).toHaveLength(2);

    await modelCall('sess-low', 90);
    await modelCall('sess-a', 40);
    await modelCall('sess-a', 40);
    expect(eventsOf('session-tokens')).toEqual([]);
    const crossedAt = await modelCall('sess-a', 40); // 120 ≥ 100
    await expect.poll(() => eventsOf('session-tokens', 'firing').length, { timeout: 5000 }).toBe(1);
    const firing = eventsOf('session-tokens', 'firing')[0]!;
    expect(firing.at - crossedAt).toBeLessThan(5000);
    expect(firing.event).toMatchObject({ group: 'sess-a', groupBy: 'session', value: 120, threshold: 100 });
    expect(firing.event.traceId).toMatch(/^[0-9a-f]{32}$/);
    await modelCall('sess-a', 40); // still over, same window: no second firing
    await new Promise((r) => setTimeout(r, 500));
    expect(eventsOf('session-tokens', 'firing')).toHaveLength(1);
    const state = (await (await fetch(`${collector.url}/api/alerts`)).json()) as {
      firing: { rule: string; group: string }[];
      recent: AlertEvent[];
    };
    expect(state.firing).toEqual([expect.objectContaining({ rule: 'session-tokens', group: 'sess-a' })]);
    expect(state.recent[0]).toMatchObject({ rule: 'session-tokens', status: 'firing', delivery: '204' });
    // The window (3 s) ages out: resolved, once; the session under the threshold never fired.
    await expect
      .poll(() => eventsOf('session-tokens', 'resolved').length, { timeout: 8000, interval: 200 })
      .toBe(1);
    expect(eventsOf('session-tokens').filter((e) => e.event.group === 'sess-low')).toEqual([]);
    // A new window: it may fire again.
    await modelCall('sess-a', 60);
    await modelCall('sess-a', 60);
    await expect.poll(() => eventsOf('session-tokens', 'firing').length, { timeout: 5000 }).toBe(2);
    expect(eventsOf('user-usd')).toEqual([]); // a few cents of tokens is far from 1000 USD
  }, 30_000);

  it('sends a test event to a rule’s webhook, and 404s an unknown rule', async () => {
    const test = (name: string) =>
      fetch(`${collector.url}/api/alerts/test`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name }),
      });
    const ok = await test('user-usd');
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ rule: 'user-usd', status: 'test', delivery: '204' });
    expect(eventsOf('user-usd', 'test')).toHaveLength(1);
    expect((await test('nope')).status).toBe(404);
  });
});

describe('cost alerts across a restart', () => {
  /** Closes the collector and starts another on the same data dir, the exporter pointed at it. */
  async function restart(): Promise<void> {
    await provider.shutdown();
    await collector.close();
    collector = await createCollector({ dataDir: dir, host: '127.0.0.1', port: 0 });
    provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'alerted-agent' }),
      spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${collector.url}/v1/traces` }))],
    });
  }

  it('neither fires again in the window it fired in nor forgets to resolve', async () => {
    const rule = { name: 'kept', measure: 'tokens', threshold: 100, windowSeconds: 4, webhook: hookUrl };
    expect((await rulesPost({ rules: [rule] })).status).toBe(200);
    await modelCall('sess-kept', 120);
    await expect.poll(() => eventsOf('kept', 'firing').length, { timeout: 5000 }).toBe(1);
    await restart();
    const state = (await (await fetch(`${collector.url}/api/alerts`)).json()) as {
      firing: { group: string }[];
    };
    expect(state.firing).toEqual([expect.objectContaining({ rule: 'kept', group: 'sess-kept' })]);
    await modelCall('sess-kept', 50); // still over, same window
    await new Promise((r) => setTimeout(r, 500));
    expect(eventsOf('kept', 'firing')).toHaveLength(1);
    // The restarted collector resolves what the first one fired, once.
    await expect.poll(() => eventsOf('kept', 'resolved').length, { timeout: 10_000, interval: 200 }).toBe(1);
  }, 30_000);

  it('skips, and says so, saved windows that are not windows', async () => {
    const bad = ['{"points": "x", "sum": 1, "firing": true}', '[1,', '{"__proto__": {"s": 1}}', 'null'];
    await collector.backend.alertWindows.write(
      bad.map((json, i) => ({ rule: 'kept', group: `s${i}`, json })),
    );
    await provider.shutdown();
    await collector.close();
    const warnings: string[] = [];
    const logger = {
      ...silentLogger,
      warn: (message: string, f?: object) => warnings.push(`${message} ${JSON.stringify(f)}`),
    };
    collector = await createCollector({ dataDir: dir, host: '127.0.0.1', port: 0, logger });
    const state = (await (await fetch(`${collector.url}/api/alerts`)).json()) as { firing: unknown[] };
    expect(state.firing).toEqual([]);
    expect(warnings.join('\n')).toMatch(/rule kept, group s0: not a window;.*group s3: not a window/);
  });
});

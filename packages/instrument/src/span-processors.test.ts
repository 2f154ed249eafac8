import { ROOT_CONTEXT, propagation } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { createAttributeFilter } from './attribute-filter.js';
import { createAttributeFilterSpanProcessor, createBaggageSpanProcessor } from './span-processors.js';

function setup(captureMessageContent: boolean) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [
      createBaggageSpanProcessor(['session.id', 'tenant.id']),
      createAttributeFilterSpanProcessor(
        createAttributeFilter({ captureMessageContent, redactAttributes: [] }),
      ),
      new SimpleSpanProcessor(exporter),
    ],
  });
  return { exporter, tracer: provider.getTracer('test') };
}

describe('span processors', () => {
  it('copies the listed baggage entries onto the span at start', () => {
    const { exporter, tracer } = setup(false);
    const baggage = propagation.createBaggage({
      'session.id': { value: 's-1' },
      'tenant.id': { value: 't-9' },
      secret: { value: 'not copied' },
    });
    const span = tracer.startSpan('work', {}, propagation.setBaggage(ROOT_CONTEXT, baggage));
    span.end();
    const [done] = exporter.getFinishedSpans();
    expect(done?.attributes).toEqual({ 'session.id': 's-1', 'tenant.id': 't-9' });
  });

  it('strips content attributes and events set at any time before end, and redacts secrets', () => {
    const { exporter, tracer } = setup(false);
    const span = tracer.startSpan('chat m', { attributes: { 'gen_ai.input.messages': '[]' } });
    span.setAttribute('gen_ai.output.messages', '[]');
    span.setAttribute('gen_ai.operation.name', 'chat');
    span.setAttribute('http.request.header.cookie', 'a=b');
    span.addEvent('gen_ai.choice', { index: 0 });
    span.addEvent('note', { 'gen_ai.prompt': 'x', kept: true });
    span.end();
    const [done] = exporter.getFinishedSpans();
    expect(done?.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'http.request.header.cookie': '[REDACTED]',
    });
    expect(done?.events.map((e) => [e.name, e.attributes])).toEqual([['note', { kept: true }]]);
  });

  it('keeps content when capture is on', () => {
    const { exporter, tracer } = setup(true);
    const span = tracer.startSpan('chat m', { attributes: { 'gen_ai.input.messages': '[]' } });
    span.addEvent('gen_ai.choice');
    span.end();
    const [done] = exporter.getFinishedSpans();
    expect(done?.attributes['gen_ai.input.messages']).toBe('[]');
    expect(done?.events).toHaveLength(1);
  });
});

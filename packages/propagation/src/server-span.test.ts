import { SpanStatusCode, type Span } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { endServerSpan } from './server-span.js';

const exporter = new InMemorySpanExporter();
const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer(
  't',
);

function ended(response: { statusCode: number; writableFinished: boolean }, prepare?: (span: Span) => void) {
  exporter.reset();
  const span = tracer.startSpan('POST /invocations');
  prepare?.(span);
  endServerSpan(span, response, prepare !== undefined);
  const [finished] = exporter.getFinishedSpans();
  return finished!;
}

describe('endServerSpan', () => {
  it('a sent 2xx: the status code, status unset', () => {
    const span = ended({ statusCode: 200, writableFinished: true });
    expect(span.attributes).toEqual({ 'http.response.status_code': 200 });
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('a 5xx is an error; a 4xx is not', () => {
    expect(ended({ statusCode: 503, writableFinished: true }).status.code).toBe(SpanStatusCode.ERROR);
    expect(ended({ statusCode: 404, writableFinished: true }).status.code).toBe(SpanStatusCode.UNSET);
  });

  it('a connection closed before the response was sent: error.type connection_closed, ERROR', () => {
    const span = ended({ statusCode: 200, writableFinished: false });
    expect(span.attributes['error.type']).toBe('connection_closed');
    expect(span.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: 'connection closed before the response was sent',
    });
  });

  it('keeps a status the caller set (the handler threw)', () => {
    const span = ended({ statusCode: 200, writableFinished: false }, (s) =>
      s.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' }),
    );
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'boom' });
    expect(span.attributes['error.type']).toBeUndefined();
    expect(span.ended).toBe(true);
  });
});

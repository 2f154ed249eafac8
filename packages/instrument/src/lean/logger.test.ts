import { TraceFlags, context, trace } from '@opentelemetry/api';
import { type LoggerProvider as ApiLoggerProvider, SeverityNumber } from '@opentelemetry/api-logs';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  InMemoryLogRecordExporter,
  LoggerProvider,
  type ReadableLogRecord,
  SimpleLogRecordProcessor,
} from '@opentelemetry/sdk-logs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAttributeFilter } from '../attribute-filter.js';
import { createAttributeFilterLogProcessor } from '../span-processors.js';
import { LeanBatch } from './batch.js';
import { LeanContextManager } from './context.js';
import { LeanLoggerProvider } from './logger.js';

const resource = resourceFromAttributes({ 'service.name': 'diff' });
const filter = createAttributeFilter({ captureMessageContent: false, redactAttributes: ['user.email'] });

interface Side {
  provider: ApiLoggerProvider;
  records(): Promise<readonly ReadableLogRecord[]>;
}

function sdkSide(): Side {
  const exporter = new InMemoryLogRecordExporter();
  const provider = new LoggerProvider({
    resource,
    processors: [createAttributeFilterLogProcessor(filter), new SimpleLogRecordProcessor(exporter)],
  });
  return { provider, records: () => Promise.resolve(exporter.getFinishedLogRecords()) };
}

/** Lean records through the lean batch, as start-logs.ts wires them. */
function leanSide(): Side {
  const exported: ReadableLogRecord[] = [];
  const exporter = {
    export: (items: ReadableLogRecord[], done: (r: { code: number }) => void) => {
      exported.push(...items);
      done({ code: 0 });
    },
    shutdown: () => Promise.resolve(),
  };
  const config = { maxQueueSize: 100, maxExportBatchSize: 7, scheduledDelayMs: 1, exportTimeoutMs: 1000 };
  const batch = new LeanBatch<ReadableLogRecord>(exporter, config, 'log record');
  const provider = new LeanLoggerProvider({
    resource,
    onEmit: (record) => {
      filter.apply(record.attributes as Record<string, unknown>);
      batch.add(record);
    },
  });
  return { provider, records: async () => (await batch.flush(), exported) };
}

/** A record as exported, as plain data (the SDK's record keeps fields behind getters). */
function normalize(records: readonly ReadableLogRecord[]) {
  return records.map((r) => ({
    hrTime: r.hrTime,
    hrTimeObserved: r.hrTimeObserved,
    spanContext: r.spanContext,
    severityText: r.severityText,
    severityNumber: r.severityNumber,
    body: r.body,
    eventName: r.eventName,
    resource: r.resource.attributes,
    scope: r.instrumentationScope,
    attributes: r.attributes,
    dropped: r.droppedAttributesCount,
  }));
}

class NotPlain {
  x = 1;
}

/** The calls the console bridge, pino/winston instrumentations and GenAI libraries make. */
function workload(provider: ApiLoggerProvider, errors: readonly Error[]): void {
  const logger = provider.getLogger('diff', '1.0.0');
  const span = trace.wrapSpanContext({
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: TraceFlags.SAMPLED,
  });
  const invalid = trace.wrapSpanContext({
    traceId: '00000000000000000000000000000000',
    spanId: '0000000000000000',
    traceFlags: TraceFlags.NONE,
  });
  context.with(trace.setSpan(context.active(), span), () => {
    logger.emit({ severityNumber: SeverityNumber.INFO, severityText: 'INFO', body: 'in a span' });
  });
  logger.emit({ body: 'explicit context', context: trace.setSpan(context.active(), span) });
  logger.emit({ body: 'invalid span', context: trace.setSpan(context.active(), invalid) });
  logger.emit({
    eventName: 'gen_ai.client.inference.operation.details',
    timestamp: new Date(1_800_000_000_123),
    observedTimestamp: [1_800_000_001, 5],
    body: { role: 'user', content: ['a', 1, true] },
    attributes: {
      'gen_ai.input.messages': '[{"role":"user"}]',
      'user.email': 'x@y.z',
      authorization: 'Bearer x',
      '': 'empty key',
      fn: (() => 1) as never,
      instance: new NotPlain() as never,
      bytes: new Uint8Array([1, 2]),
      nested: { a: { b: [1, 2] } },
      nothing: null,
      n: 3,
    },
  });
  const cyclic: Record<string, unknown> = {};
  cyclic['self'] = cyclic;
  logger.emit({ attributes: { cyclic: cyclic as never, ok: 'yes' } });
  const many: Record<string, number> = {};
  for (let i = 0; i < 140; i++) many[`k${i}`] = i;
  logger.emit({ severityNumber: SeverityNumber.WARN, attributes: many });
  logger.emit({ severityNumber: SeverityNumber.ERROR, exception: errors[0] });
  logger.emit({ exception: errors[1], attributes: { 'exception.message': 'kept' } });
  logger.emit({ exception: 'a string' });
  logger.emit({ exception: 42 });
  logger.emit({ exception: {} });
  logger.emit({ timestamp: 1_800_000_000_456.5 });
  provider.getLogger('diff', '1.0.0').emit({ body: 'same logger' });
  provider.getLogger('diff', '2.0.0', { schemaUrl: 'https://x' }).emit({ body: 'other scope' });
  provider.getLogger('').emit({ body: 'no name' });
  provider
    .getLogger('scoped', undefined, { attributes: { team: 'a', '': 'x' } } as never)
    .emit({ body: 's' });
}

beforeEach(() => {
  context.setGlobalContextManager(new LeanContextManager().enable());
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(1_800_000_000_000);
});
afterEach(() => {
  vi.useRealTimers();
  context.disable();
});

describe('lean logger provider against the SDK', () => {
  it('exports the same log records for the same calls', async () => {
    const errors = [Object.assign(new Error('boom'), { code: 'E_BOOM' }), new TypeError('typed')];
    const sdk = sdkSide();
    workload(sdk.provider, errors);
    const lean = leanSide();
    workload(lean.provider, errors);
    const expected = normalize(await sdk.records());
    expect(expected.length).toBe(16);
    expect(normalize(await lean.records())).toEqual(expected);
  });
});

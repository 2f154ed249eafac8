import { type LogRecord } from './logger.js';

const SEVERITY: Record<string, number> = { debug: 5, info: 9, warn: 13, error: 17 };

export interface OtlpLogExporter {
  export(record: LogRecord): void;
  /** Sends what is queued; resolves when the POST has finished (errors are dropped, see below). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

function anyValue(value: unknown): Record<string, unknown> {
  if (typeof value === 'string') return { stringValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  if (typeof value === 'number')
    return Number.isInteger(value) ? { intValue: value } : { doubleValue: value };
  return { stringValue: JSON.stringify(value) };
}

/**
 * Batches log records and POSTs them as OTLP/HTTP JSON to `<endpoint>/v1/logs`. `sessionId` becomes
 * the `session.id` attribute and `runtimeArn` the record's `cloud.resource_id`, so a collector can
 * join worker output to the session's traces.
 */
export function createOtlpLogExporter(endpoint: string, intervalMs = 1000): OtlpLogExporter {
  const url = `${endpoint.replace(/\/+$/, '')}/v1/logs`;
  let queue: LogRecord[] = [];
  let inflight: Promise<void> = Promise.resolve();
  const send = (): Promise<void> => {
    if (queue.length === 0) return inflight;
    const batch = queue;
    queue = [];
    const logRecords = batch.map(({ time, level, msg, ...fields }) => ({
      timeUnixNano: String(BigInt(Date.parse(time)) * 1_000_000n),
      severityNumber: SEVERITY[level] ?? 9,
      severityText: level.toUpperCase(),
      body: { stringValue: msg },
      attributes: Object.entries(fields).map(([key, value]) => ({
        key: key === 'sessionId' ? 'session.id' : key === 'runtimeArn' ? 'cloud.resource_id' : key,
        value: anyValue(value),
      })),
    }));
    const body = JSON.stringify({
      resourceLogs: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'agentrt-runtime' } }] },
          scopeLogs: [{ scope: { name: '@agentrt/runtime' }, logRecords }],
        },
      ],
    });
    inflight = inflight.then(() =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(
        (res) => void res.body?.cancel(),
        // A collector that is down must not take the runtime with it; the JSON lines on stdout remain.
        () => undefined,
      ),
    );
    return inflight;
  };
  const timer = setInterval(() => void send(), intervalMs);
  timer.unref();
  return {
    export: (record) => {
      queue.push(record);
      if (queue.length >= 512) void send();
    },
    flush: send,
    close: async () => {
      clearInterval(timer);
      await send();
    },
  };
}

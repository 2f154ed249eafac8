import { describe, expect, it } from 'vitest';
import { exportedByInstrument, parseWorkerLine } from './worker-output.js';

describe("a worker's output lines as log records", () => {
  it("keeps a structured logger's level, message, trace, span and fields", () => {
    const line = JSON.stringify({
      time: '2026-11-26T16:47:19.881Z',
      level: 'warn',
      msg: 'model provider offline',
      logger: 'sdk-agent',
      traceId: 'AB'.repeat(16),
      spanId: 'cd'.repeat(8),
    });
    expect(parseWorkerLine(line, 'stdout')).toEqual({
      level: 'warn',
      msg: 'model provider offline',
      fields: { stream: 'stdout', logger: 'sdk-agent', traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8) },
      structured: true,
    });
    // pino's numbers, `message`, snake_case ids; a malformed id is left out.
    expect(parseWorkerLine('{"level":50,"message":"boom","trace_id":"xyz","pid":7}', 'stdout')).toEqual({
      level: 'error',
      msg: 'boom',
      fields: { stream: 'stdout', pid: 7 },
      structured: true,
    });
    expect(parseWorkerLine('{"level":"trace","msg":"t"}', 'stderr').level).toBe('debug');
  });

  it('takes any other line as its text: INFO on stdout, WARN on stderr', () => {
    expect(parseWorkerLine('listening on 8080', 'stdout')).toEqual({
      level: 'info',
      msg: 'listening on 8080',
      fields: { stream: 'stdout' },
      structured: false,
    });
    for (const line of ['    at main (file.js:1:1)', '{not json', '{"no":"message"}', '[1,2]'])
      expect(parseWorkerLine(line, 'stderr')).toMatchObject({ level: 'warn', msg: line, structured: false });
  });

  it("under the instrument preload, leaves to the worker what it exports itself, not a crash's trace", () => {
    const structured = parseWorkerLine('{"level":"info","msg":"listening"}', 'stderr');
    expect(exportedByInstrument(structured, 'stderr')).toBe(true);
    expect(exportedByInstrument(parseWorkerLine('hello', 'stdout'), 'stdout')).toBe(true);
    expect(exportedByInstrument(parseWorkerLine('    at main (a.js:1:1)', 'stderr'), 'stderr')).toBe(false);
  });
});

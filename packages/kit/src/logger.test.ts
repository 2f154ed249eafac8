import { describe, expect, it } from 'vitest';
import { type LogRecord, type LoggerOptions, createLogger, silentLogger } from './logger.js';

/** A logger writing into an array; `records` parses each line on its own. */
function capture(options: Omit<LoggerOptions, 'write'> = {}) {
  const lines: string[] = [];
  const logger = createLogger({ ...options, write: (line) => lines.push(line) });
  const records = () => lines.map((line) => JSON.parse(line) as LogRecord);
  return { lines, logger, records };
}

describe('createLogger', () => {
  it('writes one JSON line per record with time, level and msg first', () => {
    const { lines, logger, records } = capture();
    logger.info('started', { port: 8080 });
    logger.error('two\nlines', { text: 'a\r\nb' });
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line.indexOf('\n')).toBe(line.length - 1);
    const [first, second] = records();
    expect(Object.keys(first!)).toEqual(['time', 'level', 'msg', 'port']);
    expect(first).toMatchObject({ level: 'info', msg: 'started', port: 8080 });
    expect(Date.parse(first!.time)).not.toBeNaN();
    expect(second).toMatchObject({ level: 'error', msg: 'two\nlines', text: 'a\r\nb' });
  });

  it('writes the levels from its minimum up, info by default', () => {
    const fromInfo = capture();
    const fromWarn = capture({ level: 'warn' });
    const fromDebug = capture({ level: 'debug' });
    for (const { logger } of [fromInfo, fromWarn, fromDebug]) {
      logger.debug('d');
      logger.info('i');
      logger.warn('w');
      logger.error('e');
    }
    expect(fromInfo.records().map((r) => r.level)).toEqual(['info', 'warn', 'error']);
    expect(fromWarn.records().map((r) => r.level)).toEqual(['warn', 'error']);
    expect(fromDebug.records().map((r) => r.level)).toEqual(['debug', 'info', 'warn', 'error']);
  });

  it("binds fields to a child, its children add theirs, the call's own fields win", () => {
    const { logger, records } = capture({ fields: { service: 'collector' } });
    const session = logger.child({ sessionId: 's-1', runtimeId: 'r-1' });
    session.child({ requestId: 'q-1' }).info('call', { runtimeId: 'r-2' });
    logger.info('parent');
    expect(records()).toEqual([
      expect.objectContaining({ service: 'collector', sessionId: 's-1', requestId: 'q-1', runtimeId: 'r-2' }),
      expect.not.objectContaining({ sessionId: 's-1' }),
    ]);
    expect(Object.keys(records()[0]!)).toEqual([
      'time',
      'level',
      'msg',
      'service',
      'sessionId',
      'runtimeId',
      'requestId',
    ]);
  });

  it('keeps its own time, level and msg over fields of the same name', () => {
    const { logger, records } = capture({ level: 'warn' });
    logger.warn('real', { level: 'debug', msg: 'fake', time: 'then', more: 1 });
    const [record] = records();
    expect(Object.keys(record!)).toEqual(['time', 'level', 'msg', 'more']);
    expect(record).toMatchObject({ level: 'warn', msg: 'real', more: 1 });
    expect(record!.time).not.toBe('then');
  });

  it('gives onRecord each record that passes the level, as written', () => {
    const seen: LogRecord[] = [];
    const { lines, logger } = capture({ level: 'info', onRecord: (record) => seen.push(record) });
    logger.child({ sessionId: 's-1' }).debug('skipped');
    logger.child({ sessionId: 's-1' }).warn('kept', { error: new Error('boom'), n: 10n });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toEqual(JSON.parse(lines[0]!));
    expect(seen[0]).toMatchObject({ level: 'warn', msg: 'kept', sessionId: 's-1', n: '10' });
    expect(seen[0]!['error']).toEqual({ name: 'Error', message: 'boom' });
  });

  it('gives onRecord plain records as written, and Dates, deep Errors and deep nesting as their lines parse', () => {
    const seen: LogRecord[] = [];
    const { lines, logger } = capture({ onRecord: (record) => seen.push(record) });
    const deep = { a: { b: { c: { d: { error: new Error('deep') } } } } };
    logger.info('plain', { city: 'Paris', forecast: { temp: 21, periods: [1, 2] } });
    logger.info('dated', { at: new Date(0) });
    logger.info('deep', { deep });
    expect(seen).toEqual(lines.map((line) => JSON.parse(line) as LogRecord));
    expect(seen[1]!['at']).toBe('1970-01-01T00:00:00.000Z');
    expect(JSON.stringify(seen[2])).toContain('"error":{"name":"Error","message":"deep"}');
  });

  it('writes an Error as its name, message, code and cause, at any depth', () => {
    const { logger, records } = capture();
    const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const error = new TypeError('fetch failed', { cause });
    logger.error('export failed', { error, nested: { errors: [new RangeError('too big')] } });
    const [record] = records();
    expect(record!['error']).toEqual({
      name: 'TypeError',
      message: 'fetch failed',
      cause: { name: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:1', code: 'ECONNREFUSED' },
    });
    expect(record!['nested']).toEqual({ errors: [{ name: 'RangeError', message: 'too big' }] });
  });

  it('ends an Error whose cause is itself', () => {
    const { logger, records } = capture();
    const error = new Error('loop');
    error.cause = error;
    logger.error('odd', { error });
    const written = records()[0]!['error'] as Record<string, unknown>;
    expect(JSON.stringify(written)).toContain('"message":"loop"');
    expect(JSON.stringify(written)).toContain('Error: loop');
  });

  it('writes BigInts as decimal strings and references back to a container as "[Circular]"', () => {
    const { logger, records } = capture();
    const loop: Record<string, unknown> = { name: 'loop' };
    loop['self'] = loop;
    const shared = { id: 7 };
    logger.info('odd values', { big: 2n ** 70n, loop, pair: [shared, shared], list: [loop] });
    const [record] = records();
    expect(record!['big']).toBe('1180591620717411303424');
    expect(record!['loop']).toEqual({ name: 'loop', self: '[Circular]' });
    expect(record!['pair']).toEqual([{ id: 7 }, { id: 7 }]); // met twice side by side: not a cycle
    expect(record!['list']).toEqual([{ name: 'loop', self: '[Circular]' }]);
  });

  it('never throws into the caller: fields it cannot write leave a logError', () => {
    const { logger, records } = capture();
    const hostile = {
      toJSON() {
        throw new Error('no JSON for you');
      },
    };
    const getter = Object.defineProperty({}, 'secret', {
      enumerable: true,
      get() {
        throw new Error('getter failed');
      },
    });
    expect(() => logger.warn('first', { hostile })).not.toThrow();
    expect(() => logger.warn('second', { getter })).not.toThrow();
    expect(records()).toEqual([
      expect.objectContaining({
        level: 'warn',
        msg: 'first',
        logError: 'fields not written: no JSON for you',
      }),
      expect.objectContaining({
        level: 'warn',
        msg: 'second',
        logError: 'fields not written: getter failed',
      }),
    ]);
  });

  it('silentLogger and its children write nothing', () => {
    expect(silentLogger.child({ a: 1 })).toBe(silentLogger);
    expect(() => silentLogger.error('x', { error: new Error('y') })).not.toThrow();
  });
});

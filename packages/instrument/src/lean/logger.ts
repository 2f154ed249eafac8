import {
  type Context,
  type HrTime,
  type SpanContext,
  context as contextApi,
  diag,
  trace,
} from '@opentelemetry/api';
import type {
  AnyValue,
  LogAttributes,
  LogBody,
  LogRecord,
  Logger,
  LoggerOptions,
  LoggerProvider,
  SeverityNumber,
} from '@opentelemetry/api-logs';
import { timeInputToHrTime } from '@opentelemetry/core';
import type { ReadableLogRecord } from '@opentelemetry/sdk-logs';
import { attributesKey } from './metric-series.js';

/** The SDK's log record limits (sdk-logs reads no environment variable for them). */
const COUNT_LIMIT = 128;

/** What the lean logger provider needs (see start-logs.ts). */
export interface LeanLoggerOptions {
  readonly resource: ReadableLogRecord['resource'];
  /** Gets every emitted record (filtering, batching). */
  readonly onEmit: (record: LeanLogRecord) => void;
}

type Scope = ReadableLogRecord['instrumentationScope'];

/** One logger per name, version, schema URL and scope attributes (the SDK's scope identity). */
export class LeanLoggerProvider implements LoggerProvider {
  private readonly loggers = new Map<string, LeanLogger>();

  constructor(private readonly options: LeanLoggerOptions) {}

  getLogger(name: string, version?: string, options?: LoggerOptions): Logger {
    if (!name) diag.warn('Logger requested without instrumentation scope name.');
    const scope: Scope = {
      name: name || 'unknown',
      version,
      schemaUrl: options?.schemaUrl,
      ...scopeAttributes((options as { attributes?: LogAttributes } | undefined)?.attributes),
    };
    const key = `${scope.name}@${version ?? ''}:${scope.schemaUrl ?? ''}:${attributesKey((scope.attributes ?? {}) as never)}`;
    let logger = this.loggers.get(key);
    if (logger === undefined) {
      logger = new LeanLogger(scope, this.options);
      this.loggers.set(key, logger);
    }
    return logger;
  }
}

function scopeAttributes(
  attributes: LogAttributes | undefined,
): Pick<Scope, 'attributes' | 'droppedAttributesCount'> {
  if (attributes == null) return {};
  const record = new LeanLogRecord();
  record.setAttributes(attributes, false);
  const count = Object.keys(record.attributes).length;
  return {
    attributes: count > 0 ? record.attributes : undefined,
    droppedAttributesCount: record.droppedAttributesCount,
  };
}

/** Emits records with the SDK's rules: its timestamps, a valid span context only, attribute checks and limits. */
export class LeanLogger implements Logger {
  constructor(
    private readonly scope: Scope,
    private readonly options: LeanLoggerOptions,
  ) {}

  emit(logRecord: LogRecord): void {
    const context = logRecord.context ?? contextApi.active();
    const record = new LeanLogRecord();
    const now = Date.now();
    record.hrTime = timeInputToHrTime(logRecord.timestamp ?? now);
    record.hrTimeObserved = timeInputToHrTime(logRecord.observedTimestamp ?? now);
    record.spanContext = validSpanContext(context);
    record.severityNumber = logRecord.severityNumber;
    record.severityText = logRecord.severityText;
    record.body = logRecord.body;
    record.resource = this.options.resource;
    record.instrumentationScope = this.scope;
    record.eventName = logRecord.eventName;
    record.setAttributes(logRecord.attributes ?? {}, true);
    if (logRecord.exception != null) record.setException(logRecord.exception);
    this.options.onEmit(record);
  }

  enabled(): boolean {
    return true;
  }
}

function validSpanContext(context: Context): SpanContext | undefined {
  const spanContext = trace.getSpanContext(context);
  return spanContext !== undefined && trace.isSpanContextValid(spanContext) ? spanContext : undefined;
}

/** A log record as the exporter reads it (the SDK's LogRecordImpl, plain fields). */
export class LeanLogRecord implements ReadableLogRecord {
  hrTime: HrTime = [0, 0];
  hrTimeObserved: HrTime = [0, 0];
  spanContext: SpanContext | undefined;
  severityText: string | undefined;
  severityNumber: SeverityNumber | undefined;
  body: LogBody | undefined;
  eventName: string | undefined;
  resource!: ReadableLogRecord['resource'];
  instrumentationScope!: Scope;
  attributes: LogAttributes = {};
  droppedAttributesCount = 0;
  private count = 0;

  /** Adds attributes in order; invalid ones are dropped (counted only for scope attributes, as the SDK does). */
  setAttributes(attributes: LogAttributes, forRecord: boolean): void {
    for (const key of Object.keys(attributes)) this.setAttribute(key, attributes[key], forRecord);
  }

  setAttribute(key: string, value: AnyValue, forRecord = true): void {
    if (key.length === 0) return this.invalid(`Invalid attribute key: ${key}`, forRecord);
    if (!isLogAttributeValue(value, new WeakSet())) {
      return this.invalid(`Invalid attribute value set for key: ${key}`, forRecord);
    }
    const isNew = !Object.prototype.hasOwnProperty.call(this.attributes, key);
    if (isNew && this.count >= COUNT_LIMIT) {
      if (this.droppedAttributesCount++ === 0 && forRecord) diag.warn('Dropping extra attributes.');
      return;
    }
    this.attributes[key] = value;
    if (isNew) this.count++;
  }

  /** The exception's type, message and stack as attributes unless already set (the SDK's rule). */
  setException(exception: unknown): void {
    const set = (key: string, value: AnyValue) => {
      if (!Object.hasOwn(this.attributes, key)) this.setAttribute(key, value);
    };
    if (typeof exception === 'string' || typeof exception === 'number') {
      set('exception.message', String(exception));
      return;
    }
    const error = (exception ?? {}) as { code?: unknown; name?: string; message?: string; stack?: string };
    const type = error.code ? String(error.code) : error.name;
    if (type) set('exception.type', type);
    if (error.message) set('exception.message', error.message);
    if (error.stack) set('exception.stacktrace', error.stack);
    if (!type && !error.message && !error.stack)
      diag.warn(`Failed to record an exception ${String(exception)}`);
  }

  private invalid(message: string, forRecord: boolean): void {
    diag.warn(message);
    if (!forRecord) this.droppedAttributesCount++;
  }
}

/** Primitives, bytes, arrays and plain objects of them, without cycles (the SDK's check). */
function isLogAttributeValue(value: unknown, seen: WeakSet<object>): boolean {
  if (value == null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    return true;
  }
  if (value instanceof Uint8Array) return true;
  if (typeof value !== 'object' || seen.has(value)) return false;
  seen.add(value);
  if (Array.isArray(value)) return value.every((item) => isLogAttributeValue(item, seen));
  if (value.constructor !== Object && value.constructor !== undefined) return false;
  return Object.values(value).every((item) => isLogAttributeValue(item, seen));
}

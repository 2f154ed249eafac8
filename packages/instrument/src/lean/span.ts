import {
  type Attributes,
  type AttributeValue,
  type Exception,
  type HrTime,
  type Link,
  type Span,
  type SpanContext,
  type SpanKind,
  type SpanStatus,
  SpanStatusCode,
  type TimeInput,
  diag,
} from '@opentelemetry/api';
import { isAttributeValue, isTimeInput, isTimeInputHrTime, millisToHrTime } from '@opentelemetry/core';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-base';
import type { SpanLimits } from '../config.js';

/** What every span of one tracer shares. */
export interface SpanShared {
  readonly resource: ReadableSpan['resource'];
  readonly instrumentationScope: ReadableSpan['instrumentationScope'];
  readonly limits: Readonly<SpanLimits>;
  /** Called once, when the span ends (filter, then the batch). */
  readonly onEnd: (span: LeanSpan) => void;
}

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * A recording span, with the SDK's semantics (limits, status rules, times, exception events) in
 * one object that is its own ReadableSpan, so agentrt's OTLP encoder reads it directly.
 */
export class LeanSpan implements Span, ReadableSpan {
  attributes: Attributes = {};
  links: Link[] = [];
  events: TimedEvent[] = [];
  status: SpanStatus = { code: SpanStatusCode.UNSET };
  endTime: HrTime = [0, 0];
  duration: HrTime = [-1, -1];
  ended = false;
  droppedAttributesCount = 0;
  droppedEventsCount = 0;
  droppedLinksCount = 0;
  readonly startTime: HrTime;
  private attributeCount = 0;
  private readonly perfStart: number;
  private readonly startProvided: boolean;

  constructor(
    private readonly shared: SpanShared,
    private readonly context: SpanContext,
    public name: string,
    readonly kind: SpanKind,
    readonly parentSpanContext: SpanContext | undefined,
    startTime: TimeInput | undefined,
  ) {
    this.perfStart = performance.now();
    this.startProvided = startTime != null;
    this.startTime = this.startProvided ? toHrTime(startTime!, this.perfStart) : millisToHrTime(Date.now());
  }

  get resource(): ReadableSpan['resource'] {
    return this.shared.resource;
  }

  get instrumentationScope(): ReadableSpan['instrumentationScope'] {
    return this.shared.instrumentationScope;
  }

  spanContext(): SpanContext {
    return this.context;
  }

  isRecording(): boolean {
    return !this.ended;
  }

  setAttribute(key: string, value: AttributeValue | undefined): this {
    if (value == null || this.endedWarn()) return this;
    if (key.length === 0 || !isAttributeValue(value)) {
      diag.warn(`Invalid attribute ${key.length === 0 ? 'key' : 'value set for key'}: ${key}`);
      return this;
    }
    const isNew = !hasOwn.call(this.attributes, key);
    if (isNew && this.attributeCount >= this.shared.limits.attributeCountLimit) {
      this.droppedAttributesCount++;
      return this;
    }
    this.attributes[key] = truncate(value, this.shared.limits.attributeValueLengthLimit);
    if (isNew) this.attributeCount++;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const key in attributes) if (hasOwn.call(attributes, key)) this.setAttribute(key, attributes[key]);
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.endedWarn()) return this;
    const { eventCountLimit, attributePerEventCountLimit, attributeValueLengthLimit } = this.shared.limits;
    if (eventCountLimit === 0) {
      this.droppedEventsCount++;
      return this;
    }
    if (this.events.length >= eventCountLimit) {
      this.events.shift();
      this.droppedEventsCount++;
    }
    if (isTimeInput(attributesOrTime)) {
      if (!isTimeInput(time)) time = attributesOrTime;
      attributesOrTime = undefined;
    }
    const [attributes, dropped] = limited(
      attributesOrTime,
      attributePerEventCountLimit,
      attributeValueLengthLimit,
    );
    this.events.push({ name, attributes, time: this.timeOf(time), droppedAttributesCount: dropped });
    return this;
  }

  addLink(link: Link): this {
    if (this.endedWarn()) return this;
    const { linkCountLimit, attributePerLinkCountLimit, attributeValueLengthLimit } = this.shared.limits;
    if (linkCountLimit === 0) {
      this.droppedLinksCount++;
      return this;
    }
    if (this.links.length >= linkCountLimit) {
      this.links.shift();
      this.droppedLinksCount++;
    }
    const [attributes, dropped] = limited(
      link.attributes,
      attributePerLinkCountLimit,
      attributeValueLengthLimit,
    );
    const kept: Link = { context: link.context };
    if (Object.keys(attributes).length > 0) kept.attributes = attributes;
    if (dropped > 0) kept.droppedAttributesCount = dropped;
    this.links.push(kept);
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (this.endedWarn() || status.code === SpanStatusCode.UNSET) return this;
    if (this.status.code === SpanStatusCode.OK) return this;
    const next: SpanStatus = { code: status.code };
    if (status.code === SpanStatusCode.ERROR && typeof status.message === 'string')
      next.message = status.message;
    this.status = next;
    return this;
  }

  updateName(name: string): this {
    if (!this.endedWarn()) this.name = name;
    return this;
  }

  end(endTime?: TimeInput): void {
    if (this.ended) {
      diag.error(
        `${this.name} ${this.context.traceId}-${this.context.spanId} - You can only call end() on a span once.`,
      );
      return;
    }
    this.endTime = this.timeOf(endTime);
    this.duration = hrDiff(this.startTime, this.endTime);
    if (this.duration[0] < 0) {
      this.endTime = [this.startTime[0], this.startTime[1]];
      this.duration = [0, 0];
    }
    this.ended = true;
    this.shared.onEnd(this);
  }

  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: Attributes = {};
    if (typeof exception === 'string') {
      attributes['exception.message'] = exception;
    } else if (exception) {
      if (exception.code) attributes['exception.type'] = exception.code.toString();
      else if (exception.name) attributes['exception.type'] = exception.name;
      if (exception.message) attributes['exception.message'] = exception.message;
      if (exception.stack) attributes['exception.stacktrace'] = exception.stack;
    }
    if (attributes['exception.type'] || attributes['exception.message']) {
      this.addEvent('exception', attributes, time);
    } else {
      diag.warn(`Failed to record an exception ${String(exception)}`);
    }
  }

  private endedWarn(): boolean {
    if (this.ended)
      diag.warn(`Cannot execute the operation on ended Span {traceId: ${this.context.traceId}}`);
    return this.ended;
  }

  /** A time given, or the start time plus the monotonic time since (the SDK's rule). */
  private timeOf(input: TimeInput | undefined): HrTime {
    if (input != null) return toHrTime(input, this.perfStart);
    if (this.startProvided) return millisToHrTime(Date.now());
    return addMillis(this.startTime, performance.now() - this.perfStart);
  }
}

/** A TimeInput as HrTime; a number at most `performance.now()` is a performance timestamp. */
function toHrTime(input: TimeInput, perfNow: number): HrTime {
  if (typeof input === 'number') {
    return millisToHrTime(input <= performance.now() ? performance.timeOrigin + input : input);
  }
  if (input instanceof Date) return millisToHrTime(input.getTime());
  if (isTimeInputHrTime(input)) return input;
  return millisToHrTime(perfNow + performance.timeOrigin);
}

function addMillis(time: HrTime, ms: number): HrTime {
  const add = millisToHrTime(ms);
  let seconds = time[0] + add[0];
  let nanos = time[1] + add[1];
  if (nanos >= 1e9) {
    nanos -= 1e9;
    seconds += 1;
  }
  return [seconds, nanos];
}

function hrDiff(start: HrTime, end: HrTime): HrTime {
  let seconds = end[0] - start[0];
  let nanos = end[1] - start[1];
  if (nanos < 0) {
    seconds -= 1;
    nanos += 1e9;
  }
  return [seconds, nanos];
}

function truncate(value: AttributeValue, limit: number): AttributeValue {
  if (limit === Infinity) return value;
  if (typeof value === 'string') return value.length <= limit ? value : value.substring(0, limit);
  if (Array.isArray(value)) {
    return value.map((v: unknown) =>
      typeof v === 'string' && v.length > limit ? v.substring(0, limit) : v,
    ) as AttributeValue;
  }
  return value;
}

/** Valid attributes up to `countLimit`, values truncated, and how many were dropped. */
function limited(
  attributes: Attributes | undefined,
  countLimit: number,
  lengthLimit: number,
): [Attributes, number] {
  const out: Attributes = {};
  let count = 0;
  let dropped = 0;
  for (const key in attributes) {
    if (!hasOwn.call(attributes, key)) continue;
    const value = attributes[key];
    if (key.length === 0 || value == null || !isAttributeValue(value)) continue;
    if (count >= countLimit) {
      dropped++;
      continue;
    }
    out[key] = truncate(value, lengthLimit);
    count++;
  }
  return [out, dropped];
}

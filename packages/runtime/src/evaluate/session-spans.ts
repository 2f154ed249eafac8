/**
 * `evaluationInput.sessionSpans`: span and log documents in the transaction-search shape (the one
 * the collector stores, `aws/spans` and the runtime logs), checked field by field, then read as a
 * session: its turns (one per trace: what the user asked, what the agent answered) and its tool
 * calls in time order. Reading never throws on odd GenAI attributes; only the document shape is
 * validated.
 */
import type { Attributes, LogRecord, SpanEventRecord } from '@agentrt/collector';
import {
  classifySpan,
  extractChatMessages,
  messageText,
  sessionIdOf,
  toolCallOf,
} from '@agentrt/collector/trace-model';
import { validationError } from '../errors.js';

export const MAX_SESSION_SPANS = 1000;
const FIELD = 'evaluationInput.sessionSpans';
/** Marks the spans evaluations write, so a later evaluation of the session leaves them out. */
export const EVALUATION_NAME_KEY = 'gen_ai.evaluation.name';

export interface SpanDoc {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: number;
  attributes: Attributes;
  resourceAttributes: Attributes;
  events: SpanEventRecord[];
  statusCode: string;
}

export interface ToolCallView {
  traceId: string;
  spanId: string;
  name: string;
  arguments?: unknown;
  result?: unknown;
  failed: boolean;
}

export interface TurnView {
  traceId: string;
  /** The agent span of the turn (else the trace's first span): what a TRACE-level result judged. */
  spanId: string;
  input: string;
  output: string;
  toolCalls: ToolCallView[];
}

export interface SessionView {
  sessionId: string;
  turns: TurnView[];
  toolCalls: ToolCallView[];
  spanCount: number;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function nanos(value: unknown, field: string): number {
  if (value === undefined) return 0;
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0)
    throw validationError(field, 'must be a non-negative number of nanoseconds');
  return n;
}

function attributesOf(value: unknown, field: string): Attributes {
  if (value === undefined) return {};
  if (!isObject(value)) throw validationError(field, 'must be an object of attribute values');
  return value as Attributes;
}

function text(doc: Json, key: string, at: string): string {
  const value = doc[key];
  if (typeof value !== 'string' || value === '')
    throw validationError(`${at}.${key}`, 'must be a non-empty string');
  return value;
}

function parseSpan(doc: Json, at: string): SpanDoc {
  const status = isObject(doc.status) && typeof doc.status.code === 'string' ? doc.status.code : 'UNSET';
  const resource = isObject(doc.resource) ? doc.resource.attributes : undefined;
  const span: SpanDoc = {
    traceId: text(doc, 'traceId', at).toLowerCase(),
    spanId: text(doc, 'spanId', at).toLowerCase(),
    name: text(doc, 'name', at),
    startTimeUnixNano: nanos(doc.startTimeUnixNano, `${at}.startTimeUnixNano`),
    attributes: attributesOf(doc.attributes, `${at}.attributes`),
    resourceAttributes: attributesOf(resource, `${at}.resource.attributes`),
    events: Array.isArray(doc.events) ? (doc.events.filter(isObject) as unknown as SpanEventRecord[]) : [],
    statusCode: status,
  };
  if (typeof doc.parentSpanId === 'string' && doc.parentSpanId !== '') span.parentSpanId = doc.parentSpanId;
  return span;
}

function parseLog(doc: Json, at: string): LogRecord {
  const log: LogRecord = {
    resource: { attributes: {} },
    scope: { name: '' },
    timeUnixNano: nanos(doc.timeUnixNano, `${at}.timeUnixNano`),
    observedTimeUnixNano: 0,
    severityNumber: 0,
    body: doc.body as LogRecord['body'],
    attributes: attributesOf(doc.attributes, `${at}.attributes`),
  };
  if (typeof doc.traceId === 'string') log.traceId = doc.traceId.toLowerCase();
  if (typeof doc.spanId === 'string') log.spanId = doc.spanId.toLowerCase();
  if (typeof doc.eventName === 'string') log.eventName = doc.eventName;
  return log;
}

/**
 * Validates the documents (each a span or a log record; 1–1000 of them when given inline), naming
 * the first bad field.
 */
export function parseSessionSpans(
  docs: unknown,
  maxDocs = MAX_SESSION_SPANS,
): { spans: SpanDoc[]; logs: LogRecord[] } {
  if (!Array.isArray(docs)) throw validationError(FIELD, 'must be a list of span documents');
  if (docs.length < 1 || docs.length > maxDocs)
    throw validationError(FIELD, `must hold 1 to ${maxDocs} documents; it holds ${docs.length}`);
  const spans: SpanDoc[] = [];
  const logs: LogRecord[] = [];
  docs.forEach((doc, i) => {
    const at = `${FIELD}[${i}]`;
    if (!isObject(doc)) throw validationError(at, 'must be a span or log record object');
    if ('body' in doc) logs.push(parseLog(doc, at));
    else if ('spanId' in doc || 'traceId' in doc) spans.push(parseSpan(doc, at));
    else throw validationError(at, 'is neither a span (traceId, spanId, name) nor a log record (body)');
  });
  return { spans: spans.filter((s) => s.attributes[EVALUATION_NAME_KEY] === undefined), logs };
}

const byTime = (a: SpanDoc, b: SpanDoc): number =>
  a.startTimeUnixNano - b.startTimeUnixNano || (a.spanId < b.spanId ? -1 : a.spanId > b.spanId ? 1 : 0);

function toolCallView(span: SpanDoc): ToolCallView {
  const call = toolCallOf(span);
  const view: ToolCallView = {
    traceId: span.traceId,
    spanId: span.spanId,
    name: call.name ?? span.name,
    failed: span.statusCode === 'ERROR',
  };
  if (call.arguments !== undefined) view.arguments = call.arguments;
  if (call.result !== undefined) view.result = call.result;
  return view;
}

function lastText(messages: { role: string }[], role: string): string {
  const found = [...messages].reverse().find((m) => m.role === role);
  return found ? messageText(found as Parameters<typeof messageText>[0]) : '';
}

/** What the user asked and what the agent answered in one trace: the agent span, else its model calls. */
function turnText(spans: SpanDoc[], logs: LogRecord[]): { input: string; output: string } {
  const agent = spans.find((s) => classifySpan(s) === 'invoke_agent');
  const chats = spans.filter((s) => classifySpan(s) === 'chat');
  const logsOf = (s: SpanDoc) => logs.filter((l) => l.spanId === s.spanId);
  const first = agent ?? chats[0];
  const last = agent ?? chats[chats.length - 1];
  const input = first ? lastText(extractChatMessages(first, logsOf(first)).input, 'user') : '';
  const output = last ? lastText(extractChatMessages(last, logsOf(last)).output, 'assistant') : '';
  return { input, output };
}

/** Reads validated documents as a session; `sessionId` overrides what the spans say. */
export function readSession(
  parsed: { spans: SpanDoc[]; logs: LogRecord[] },
  sessionId?: string,
): SessionView {
  const spans = [...parsed.spans].sort(byTime);
  const id = sessionId ?? spans.map((s) => sessionIdOf(s.attributes, s.resourceAttributes)).find(Boolean);
  if (!id)
    throw validationError(
      FIELD,
      'no span names its session (attribute session.id or gen_ai.conversation.id)',
    );
  const traceIds = [...new Set(spans.map((s) => s.traceId))];
  const turns = traceIds.map((traceId): TurnView => {
    const own = spans.filter((s) => s.traceId === traceId);
    const agent = own.find((s) => classifySpan(s) === 'invoke_agent') ?? own[0]!;
    const toolCalls = own.filter((s) => classifySpan(s) === 'execute_tool').map(toolCallView);
    const logs = parsed.logs.filter((l) => l.traceId === traceId);
    return { traceId, spanId: agent.spanId, toolCalls, ...turnText(own, logs) };
  });
  return { sessionId: id, turns, toolCalls: turns.flatMap((t) => t.toolCalls), spanCount: spans.length };
}

/**
 * GenAI reading of spans: what kind of step a span is (agent, model call, tool call), the chat
 * messages a model call received and produced, and a tool call's arguments and result. The
 * conventions moved several times (see the collector landscape, section 8), so every reader accepts
 * the current `gen_ai.*` names, the legacy ones and event / log-record forms, and never throws.
 */
import type { AttributeValue, Attributes, LogRecord, SpanEventRecord } from '../wire-types.js';

export type GenAiKind = 'invoke_agent' | 'chat' | 'execute_tool' | 'other';

interface SpanLike {
  name: string;
  attributes: Attributes;
}

const INFERENCE_OPERATIONS = new Set(['chat', 'text_completion', 'generate_content', 'completion']);
const AGENT_OPERATIONS = new Set(['invoke_agent', 'create_agent', 'invoke_workflow']);
const OPENINFERENCE_KINDS: Record<string, GenAiKind> = {
  AGENT: 'invoke_agent',
  CHAIN: 'invoke_agent',
  LLM: 'chat',
  TOOL: 'execute_tool',
};

function str(value: AttributeValue | undefined): string | undefined {
  return typeof value === 'string' && value !== ''
    ? value
    : typeof value === 'number'
      ? String(value)
      : undefined;
}

/** `gen_ai.operation.name` (or its older / vendor equivalents), lower-cased. */
export function genAiOperation(span: SpanLike): string | undefined {
  const a = span.attributes;
  return (str(a['gen_ai.operation.name']) ?? str(a['llm.request.type']))?.toLowerCase();
}

/** Classifies a span from its operation attribute, else from its name prefix. */
export function classifySpan(span: SpanLike): GenAiKind {
  const op = genAiOperation(span);
  if (op) {
    if (AGENT_OPERATIONS.has(op)) return 'invoke_agent';
    if (INFERENCE_OPERATIONS.has(op)) return 'chat';
    if (op === 'execute_tool') return 'execute_tool';
  }
  const oi = str(span.attributes['openinference.span.kind'])?.toUpperCase();
  if (oi && OPENINFERENCE_KINDS[oi]) return OPENINFERENCE_KINDS[oi];
  const name = span.name.toLowerCase();
  if (/^(invoke_agent|invoke_workflow|create_agent)\b/.test(name)) return 'invoke_agent';
  if (/^(chat|text_completion|generate_content)\b/.test(name)) return 'chat';
  if (/^execute_tool\b/.test(name)) return 'execute_tool';
  return 'other';
}

/** The session a span belongs to: `session.id`, then `gen_ai.conversation.id`, then vendor names. */
export function sessionIdOf(attributes: Attributes, resourceAttributes: Attributes = {}): string | undefined {
  for (const key of ['session.id', 'gen_ai.conversation.id', 'langfuse.session.id']) {
    const v = str(attributes[key]) ?? str(resourceAttributes[key]);
    if (v) return v;
  }
  return undefined;
}

export interface GenAiFacts {
  kind: GenAiKind;
  operation?: string;
  provider?: string;
  requestModel?: string;
  responseModel?: string;
  agentName?: string;
  toolName?: string;
  finishReasons?: string[];
}

/** The GenAI facts a UI shows next to a span's name. */
export function genAiFacts(span: SpanLike): GenAiFacts {
  const a = span.attributes;
  const finish = a['gen_ai.response.finish_reasons'];
  const facts: GenAiFacts = { kind: classifySpan(span) };
  const set = <K extends keyof GenAiFacts>(key: K, value: GenAiFacts[K] | undefined): void => {
    if (value !== undefined) facts[key] = value;
  };
  set('operation', genAiOperation(span));
  set('provider', str(a['gen_ai.provider.name']) ?? str(a['gen_ai.system']));
  set('requestModel', str(a['gen_ai.request.model']));
  set('responseModel', str(a['gen_ai.response.model']));
  set('agentName', str(a['gen_ai.agent.name']));
  set('toolName', str(a['gen_ai.tool.name']));
  if (Array.isArray(finish)) set('finishReasons', finish.map(String));
  else set('finishReasons', str(finish) ? [str(finish)!] : undefined);
  return facts;
}

// ---- values -----------------------------------------------------------------------------------

/** Parses a JSON-looking string; returns any other value (or a string that is not JSON) unchanged. */
export function parseMaybeJson(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const t = value.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return value;
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return value; // Not JSON after all: show the text as it came.
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

// ---- messages ---------------------------------------------------------------------------------

export type MessagePart =
  | { type: 'text'; content: string }
  | { type: 'reasoning'; content: string }
  | { type: 'tool_call'; id?: string; name: string; arguments: unknown }
  | { type: 'tool_call_response'; id?: string; response: unknown }
  | { type: 'other'; partType: string; value: unknown };

export interface ChatMessage {
  role: string;
  parts: MessagePart[];
  finishReason?: string;
}

export type MessageSource = 'attributes' | 'details-event' | 'legacy-attributes' | 'events' | 'logs';

export interface ChatTranscript {
  system: ChatMessage[];
  input: ChatMessage[];
  output: ChatMessage[];
  /** Where each side was found (undefined: nothing found). */
  inputSource?: MessageSource;
  outputSource?: MessageSource;
}

function normalizePart(raw: unknown): MessagePart | undefined {
  if (typeof raw === 'string') return { type: 'text', content: raw };
  if (!isRecord(raw))
    return raw === undefined || raw === null
      ? undefined
      : { type: 'other', partType: typeof raw, value: raw };
  const type = text(raw.type);
  // Current semconv parts.
  if (type === 'text' || (type === undefined && typeof raw.text === 'string')) {
    const content = text(raw.content) ?? text(raw.text);
    if (content !== undefined) return { type: 'text', content };
  }
  if (type === 'reasoning' || type === 'thinking') {
    const content = text(raw.content) ?? text(raw.thinking) ?? text(raw.text);
    if (content !== undefined) return { type: 'reasoning', content };
  }
  if (type === 'tool_call' || type === 'tool_use' || type === 'function_call') {
    return withId(
      {
        type: 'tool_call',
        name: text(raw.name) ?? '',
        arguments: parseMaybeJson(raw.arguments ?? raw.input),
      },
      raw.id ?? raw.call_id,
    );
  }
  if (type === 'tool_call_response' || type === 'tool_result' || type === 'function_call_output') {
    return withId(
      {
        type: 'tool_call_response',
        response: parseMaybeJson(raw.response ?? raw.content ?? raw.output ?? raw.result),
      },
      raw.id ?? raw.tool_use_id ?? raw.call_id,
    );
  }
  // Bedrock Converse content blocks: { toolUse: {...} }, { toolResult: {...} }.
  if (isRecord(raw.toolUse)) {
    const t = raw.toolUse;
    return withId(
      { type: 'tool_call', name: text(t.name) ?? '', arguments: parseMaybeJson(t.input) },
      t.toolUseId,
    );
  }
  if (isRecord(raw.toolResult)) {
    const t = raw.toolResult;
    return withId({ type: 'tool_call_response', response: parseMaybeJson(t.content) }, t.toolUseId);
  }
  return { type: 'other', partType: type ?? 'object', value: raw };
}

function withId<P extends { type: 'tool_call' | 'tool_call_response' }>(
  part: P,
  id: unknown,
): P & { id?: string } {
  const s = typeof id === 'string' ? id : typeof id === 'number' ? String(id) : undefined;
  return s ? { ...part, id: s } : part;
}

function partsOf(content: unknown): MessagePart[] {
  const value = parseMaybeJson(content);
  if (Array.isArray(value)) return value.map(normalizePart).filter((p) => p !== undefined);
  if (typeof content === 'string' && typeof value !== 'string') return [{ type: 'text', content }];
  const part = normalizePart(value);
  return part ? [part] : [];
}

/** One message in any of the shapes seen in the wild (semconv parts, OpenAI, Anthropic, Bedrock). */
export function normalizeMessage(raw: unknown, defaultRole: string): ChatMessage | undefined {
  const value = parseMaybeJson(raw);
  if (typeof value === 'string') return { role: defaultRole, parts: [{ type: 'text', content: value }] };
  if (!isRecord(value)) return undefined;
  // A `gen_ai.choice` body wraps the message.
  if (value.message !== undefined && value.message !== null && value.role === undefined) {
    const inner = isRecord(value.message)
      ? normalizeMessage(value.message, defaultRole)
      : { role: defaultRole, parts: partsOf(value.message) };
    const finish = text(value.finish_reason);
    return inner && finish && !inner.finishReason ? { ...inner, finishReason: finish } : inner;
  }
  const role = text(value.role) ?? defaultRole;
  const parts: MessagePart[] = [];
  if (Array.isArray(value.parts))
    parts.push(...value.parts.map(normalizePart).filter((p) => p !== undefined));
  else if (value.content !== undefined && value.content !== null) parts.push(...partsOf(value.content));
  if (Array.isArray(value.tool_calls)) {
    for (const call of value.tool_calls) {
      if (!isRecord(call)) continue;
      const fn = isRecord(call.function) ? call.function : call;
      parts.push(
        withId(
          { type: 'tool_call', name: text(fn.name) ?? '', arguments: parseMaybeJson(fn.arguments) },
          call.id,
        ),
      );
    }
  }
  const only = parts.length === 1 ? parts[0] : undefined;
  if (role === 'tool' && only?.type === 'text' && value.tool_call_id !== undefined) {
    parts[0] = withId(
      { type: 'tool_call_response', response: parseMaybeJson(only.content) },
      value.tool_call_id,
    );
  }
  const message: ChatMessage = { role, parts };
  const finish = text(value.finish_reason);
  if (finish) message.finishReason = finish;
  return message;
}

/** A list of messages from an attribute value (JSON string, array, or a single message/text). */
export function normalizeMessages(raw: unknown, defaultRole: string): ChatMessage[] {
  const value = parseMaybeJson(raw);
  const list = Array.isArray(value)
    ? value
    : value === undefined || value === null || value === ''
      ? []
      : [value];
  return list.map((m) => normalizeMessage(m, defaultRole)).filter((m) => m !== undefined);
}

/** Traceloop-style indexed attributes: `gen_ai.prompt.0.role`, `gen_ai.prompt.0.content`, … */
function indexedMessages(attributes: Attributes, prefix: string, defaultRole: string): ChatMessage[] {
  const messages: ChatMessage[] = [];
  for (let i = 0; i < 1000; i++) {
    const content = attributes[`${prefix}.${i}.content`];
    const role = str(attributes[`${prefix}.${i}.role`]);
    if (content === undefined && role === undefined) break;
    const m = normalizeMessage({ role: role ?? defaultRole, content: content ?? '' }, defaultRole);
    const finish = str(attributes[`${prefix}.${i}.finish_reason`]);
    if (m) messages.push(finish ? { ...m, finishReason: finish } : m);
  }
  return messages;
}

const EVENT_ROLES: Record<string, string> = {
  'gen_ai.system.message': 'system',
  'gen_ai.user.message': 'user',
  'gen_ai.assistant.message': 'assistant',
  'gen_ai.tool.message': 'tool',
  'gen_ai.choice': 'assistant',
};
const DETAILS_EVENT = 'gen_ai.client.inference.operation.details';

/** Messages from per-message events (span events or log records, already reduced to name + payload). */
function messagesFromEvents(events: { name: string; payload: unknown }[]): {
  input: ChatMessage[];
  output: ChatMessage[];
  system: ChatMessage[];
} {
  const out = { input: [] as ChatMessage[], output: [] as ChatMessage[], system: [] as ChatMessage[] };
  for (const e of events) {
    const role = EVENT_ROLES[e.name];
    if (!role) continue;
    const m = normalizeMessage(e.payload, role);
    if (!m) continue;
    if (e.name === 'gen_ai.choice') out.output.push(m);
    else if (role === 'system') out.system.push(m);
    else out.input.push(m);
  }
  return out;
}

/** A span event's payload: its attributes, with a `content`/`message` attribute decoded. */
function eventPayload(attributes: Attributes): unknown {
  const payload: Record<string, unknown> = { ...attributes };
  if (payload.message !== undefined) payload.message = parseMaybeJson(payload.message);
  if (payload.content !== undefined) payload.content = parseMaybeJson(payload.content);
  return payload;
}

function logEventName(log: LogRecord): string | undefined {
  return log.eventName || str(log.attributes['event.name']) || str(log.attributes['gen_ai.event.name']);
}

/**
 * The conversation of a model call (or an agent invocation): system instructions, input and output
 * messages, from the first source that has them for each side.
 */
export function extractChatMessages(
  span: SpanLike & { events?: SpanEventRecord[] },
  logs: readonly LogRecord[] = [],
): ChatTranscript {
  const a = span.attributes;
  const events = span.events ?? [];
  const details = events.find((e) => e.name === DETAILS_EVENT)?.attributes;
  const detailLog = logs.find((l) => logEventName(l) === DETAILS_EVENT);
  const detailLogAttrs: Attributes = detailLog
    ? { ...(isRecord(detailLog.body) ? (detailLog.body as Attributes) : {}), ...detailLog.attributes }
    : {};
  const fromSpanEvents = messagesFromEvents(
    events.map((e) => ({ name: e.name, payload: eventPayload(e.attributes) })),
  );
  const fromLogs = messagesFromEvents(
    logs.map((l) => ({
      name: logEventName(l) ?? '',
      payload: isRecord(l.body) || typeof l.body === 'string' ? l.body : eventPayload(l.attributes),
    })),
  );

  type Candidate = [MessageSource, ChatMessage[]];
  const pick = (candidates: Candidate[]): [MessageSource | undefined, ChatMessage[]] => {
    for (const [source, messages] of candidates) if (messages.length > 0) return [source, messages];
    return [undefined, []];
  };
  const SIDES = {
    input: { current: 'gen_ai.input.messages', legacy: 'gen_ai.prompt', value: 'input.value', role: 'user' },
    output: {
      current: 'gen_ai.output.messages',
      legacy: 'gen_ai.completion',
      value: 'output.value',
      role: 'assistant',
    },
  } as const;
  const side = (which: keyof typeof SIDES) => {
    const k = SIDES[which];
    return pick([
      ['attributes', normalizeMessages(a[k.current], k.role)],
      ['details-event', normalizeMessages(details?.[k.current], k.role)],
      ['logs', normalizeMessages(detailLogAttrs[k.current], k.role)],
      ['legacy-attributes', normalizeMessages(a[k.legacy], k.role)],
      ['legacy-attributes', indexedMessages(a, k.legacy, k.role)],
      ['legacy-attributes', normalizeMessages(a[k.value], k.role)],
      ['events', fromSpanEvents[which]],
      ['logs', fromLogs[which]],
    ]);
  };
  const [inputSource, input] = side('input');
  const [outputSource, output] = side('output');
  const [, system] = pick([
    ['attributes', systemInstructions(a['gen_ai.system_instructions'])],
    ['details-event', systemInstructions(details?.['gen_ai.system_instructions'])],
    ['events', fromSpanEvents.system],
    ['logs', fromLogs.system],
  ]);
  const transcript: ChatTranscript = { system, input, output };
  if (inputSource) transcript.inputSource = inputSource;
  if (outputSource) transcript.outputSource = outputSource;
  return transcript;
}

/** `gen_ai.system_instructions`: a list of parts (or a string) as one system message. */
function systemInstructions(raw: unknown): ChatMessage[] {
  if (raw === undefined || raw === null || raw === '') return [];
  const parts = partsOf(raw);
  return parts.length > 0 ? [{ role: 'system', parts }] : [];
}

/** Plain text of a message's text parts, e.g. for a conversation preview. */
export function messageText(message: ChatMessage): string {
  return message.parts
    .map((p) => (p.type === 'text' ? p.content : ''))
    .filter((s) => s !== '')
    .join('\n');
}

// ---- tools ------------------------------------------------------------------------------------

export interface ToolCall {
  name?: string;
  callId?: string;
  description?: string;
  toolType?: string;
  /** Parsed from JSON when the attribute is a JSON string. */
  arguments?: unknown;
  result?: unknown;
}

/** Tool name, id, arguments and result of an `execute_tool` span (undefined values left out). */
export function toolCallOf(span: SpanLike): ToolCall {
  const a = span.attributes;
  const call: ToolCall = {};
  const name =
    str(a['gen_ai.tool.name']) ??
    (classifySpan(span) === 'execute_tool'
      ? span.name.replace(/^execute_tool\s*/i, '') || undefined
      : undefined);
  const entries: [keyof ToolCall, unknown][] = [
    ['name', name],
    ['callId', str(a['gen_ai.tool.call.id'])],
    ['description', str(a['gen_ai.tool.description'])],
    ['toolType', str(a['gen_ai.tool.type'])],
    [
      'arguments',
      parseMaybeJson(a['gen_ai.tool.call.arguments'] ?? a['input.value'] ?? a['traceloop.entity.input']),
    ],
    [
      'result',
      parseMaybeJson(a['gen_ai.tool.call.result'] ?? a['output.value'] ?? a['traceloop.entity.output']),
    ],
  ];
  for (const [key, value] of entries) if (value !== undefined) (call as Record<string, unknown>)[key] = value;
  return call;
}

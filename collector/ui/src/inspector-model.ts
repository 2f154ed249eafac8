/**
 * The Inspector's model, apart from its view: the chat sessions kept per runtime in the browser's
 * storage, the trace context each turn starts, and the reader that turns an agent's answer (JSON,
 * server-sent events, plain text) into the text shown as it streams.
 */

export interface ChatMessage {
  role: 'user' | 'agent' | 'error';
  text: string;
  /** The trace the turn started (its traceparent): the spans shown beside the chat. */
  traceId?: string;
  atMs: number;
}

export interface InspectorSession {
  /** The runtime session id sent on every turn (the runtime keeps the worker and its state). */
  id: string;
  name: string;
  messages: ChatMessage[];
}

export interface RuntimeSessions {
  sessions: InspectorSession[];
  activeId?: string;
}

/** Where a runtime's sessions are kept: one storage key per runtime host and ARN. */
export const sessionsKey = (host: string, arn: string): string => `agentrt.inspector.${host} ${arn}`;

const randomHex = (bytes: number): string =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join('');

/** A runtime session id: 33 characters or more, as the runtime requires. */
export const newSessionId = (): string => `inspector-${randomHex(16)}`;

/** A sampled W3C traceparent starting a new trace, and that trace's id. */
export function newTraceparent(): { traceId: string; header: string } {
  const traceId = randomHex(16);
  return { traceId, header: `00-${traceId}-${randomHex(8)}-01` };
}

export function newSession(existing: readonly InspectorSession[]): InspectorSession {
  return { id: newSessionId(), name: `session ${existing.length + 1}`, messages: [] };
}

/** The stored sessions of a runtime; anything unreadable counts as none (a page never breaks on it). */
export function loadSessions(storage: Pick<Storage, 'getItem'>, key: string): RuntimeSessions {
  try {
    const parsed = JSON.parse(storage.getItem(key) ?? 'null') as RuntimeSessions | null;
    if (parsed && Array.isArray(parsed.sessions)) return parsed;
  } catch {
    // A value another version wrote, or hand-edited: start again.
  }
  return { sessions: [] };
}

export function saveSessions(storage: Pick<Storage, 'setItem'>, key: string, value: RuntimeSessions): void {
  try {
    storage.setItem(key, JSON.stringify(value));
  } catch {
    // Storage full or disabled: the sessions last for this page only.
  }
}

/**
 * Splits server-sent events off a buffer: the `data` of each complete event, and what is left (all
 * of it is complete when `final`).
 */
export function takeSseEvents(buffer: string, final: boolean): { data: string[]; rest: string } {
  const blocks = buffer.split(/\r?\n\r?\n/);
  const rest = final ? '' : blocks.pop()!;
  const data = blocks
    .map((block) =>
      block
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n'),
    )
    .filter(Boolean);
  return { data, rest };
}

/** The text one event of an answer stream adds: text deltas and final results, not tool events. */
function eventText(data: string, seen: { text: boolean }): string {
  let event: unknown;
  try {
    event = JSON.parse(data);
  } catch {
    return data; // plain text frames
  }
  if (typeof event === 'string') return event;
  if (typeof event !== 'object' || event === null) return String(event);
  const e = event as Record<string, unknown>;
  if (e.type === 'text' && typeof e.data === 'string') return e.data;
  // A final result repeats the deltas when they came; alone, it is the answer.
  if (typeof e.result === 'string') return seen.text ? '' : e.result;
  if (e.type === 'tool_call' && typeof e.name === 'string') return `\n⚙ ${e.name}\n`;
  return '';
}

/**
 * Reads an answer as it streams: `push` each decoded chunk, get the text it adds; `end` gives what
 * is left. Server-sent events are split into events (`data:` lines); JSON answers are read whole
 * (their `result`, else the JSON); anything else is text as it comes.
 */
export function createAnswerReader(contentType: string) {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  const seen = { text: false };
  let buffer = '';
  const take = (text: string): string => {
    if (text) seen.text = true;
    return text;
  };
  const events = (final: boolean): string => {
    const { data, rest } = takeSseEvents(buffer, final);
    buffer = rest;
    return data.map((d) => take(eventText(d, seen))).join('');
  };
  return {
    push(chunk: string): string {
      if (type === 'text/event-stream') {
        buffer += chunk;
        return events(false);
      }
      if (type === 'application/json') {
        buffer += chunk;
        return '';
      }
      return take(chunk);
    },
    end(): string {
      if (type === 'text/event-stream') return events(true);
      if (type !== 'application/json') return '';
      const whole = buffer;
      buffer = '';
      return eventText(whole, seen) || whole;
    },
  };
}

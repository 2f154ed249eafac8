/** A trace read as one conversational turn: the user's prompt, the agent's answer, the tools used. */
import {
  extractChatMessages,
  messageText,
  toolCallOf,
  type ChatMessage,
} from '../../src/trace-model/index.js';
import type { SpanView, TraceView } from './view-types.js';

export interface ConversationTurn {
  prompt?: string;
  answer?: string;
  tools: string[];
  models: string[];
}

function transcript(span: SpanView) {
  return extractChatMessages(span.source.span, span.source.logs);
}

function lastText(messages: ChatMessage[], role?: string): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (role && m.role !== role) continue;
    const t = messageText(m);
    if (t) return t;
  }
  return undefined;
}

/** In start order, so "first" and "last" mean what a reader expects. */
function ordered(trace: TraceView): SpanView[] {
  return [...trace.spans].sort((a, b) => a.startTimeUnixNano - b.startTimeUnixNano);
}

export function conversationTurn(trace: TraceView): ConversationTurn {
  const spans = ordered(trace);
  const agents = spans.filter((s) => s.genai.kind === 'invoke_agent');
  const chats = spans.filter((s) => s.genai.kind === 'chat');
  const turn: ConversationTurn = { tools: [], models: [] };
  // The prompt: what the outermost agent received, else the user text of the first model call.
  for (const s of [...agents, ...chats]) {
    const t = lastText(transcript(s).input, 'user');
    if (t) {
      turn.prompt = t;
      break;
    }
  }
  // The answer: what the outermost agent returned, else the last model call's output.
  for (const s of [...agents, ...[...chats].reverse()]) {
    const t = lastText(transcript(s).output);
    if (t) {
      turn.answer = t;
      break;
    }
  }
  for (const s of spans) {
    if (s.genai.kind === 'execute_tool') {
      const name = toolCallOf(s.source.span).name ?? s.name;
      if (!turn.tools.includes(name)) turn.tools.push(name);
    }
    const model = s.genai.kind === 'chat' ? (s.genai.responseModel ?? s.genai.requestModel) : undefined;
    if (model && !turn.models.includes(model)) turn.models.push(model);
  }
  return turn;
}

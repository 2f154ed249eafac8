/**
 * What an agent remembers of a session: the turns so far (each prompt and the final answer, not the
 * tool calls between them), so the next invocation in the same session continues the conversation.
 * A hosted session runs in a process of its own, but one process may serve many sessions (the
 * weather service), so turns are kept per session id, for the most recent sessions only.
 */
import type { MessageData } from '@strands-agents/sdk';

export interface ConversationStore {
  /** The turns of a session so far, oldest first (empty for a new session). */
  history(sessionId: string): MessageData[];
  /** Appends one turn: the user's prompt and the agent's final answer. */
  record(sessionId: string, prompt: string, answer: string): void;
}

export interface ConversationStoreOptions {
  /** Sessions remembered (the least recently used is forgotten first). */
  maxSessions?: number;
  /** Turns remembered per session (the oldest go first). */
  maxTurns?: number;
}

export function createConversationStore(options: ConversationStoreOptions = {}): ConversationStore {
  const maxSessions = options.maxSessions ?? 1000;
  const maxTurns = options.maxTurns ?? 20;
  const sessions = new Map<string, MessageData[]>();
  return {
    history(sessionId) {
      return [...(sessions.get(sessionId) ?? [])];
    },
    record(sessionId, prompt, answer) {
      const turns = sessions.get(sessionId) ?? [];
      sessions.delete(sessionId); // re-inserted last: the Map's order is the recency order
      turns.push({ role: 'user', content: [{ text: prompt }] });
      turns.push({ role: 'assistant', content: [{ text: answer }] });
      sessions.set(sessionId, turns.slice(-2 * maxTurns));
      for (const oldest of sessions.keys()) {
        if (sessions.size <= maxSessions) break;
        sessions.delete(oldest);
      }
    },
  };
}

/** The conversations of this process's agents (see AgentRunOptions.conversations). */
export const processConversations: ConversationStore = createConversationStore();

/** Pure trace-model functions shared by the collector API, the CLI and the web UI. */
export { buildSpanTree, compareSpans, flattenSpanTree, traceBounds, walkSpanTree } from './span-tree.js';
export type { SpanTiming, SpanTreeNode } from './span-tree.js';
export { criticalPath, traceCriticalPath } from './critical-path.js';
export type { CriticalPath, CriticalSegment } from './critical-path.js';
export {
  INPUT_TOKEN_KEYS,
  OUTPUT_TOKEN_KEYS,
  TOTAL_TOKEN_KEYS,
  ZERO_TOKENS,
  addTokens,
  rollUpTokens,
  spanTokenUsage,
  sumTokens,
  sumTokensByModel,
  tokensByModel,
  traceTokenTotals,
  traceTokenUsage,
  usageModel,
} from './tokens.js';
export type { TokenRollup } from './tokens.js';
export {
  classifySpan,
  extractChatMessages,
  genAiFacts,
  genAiOperation,
  messageText,
  normalizeMessage,
  normalizeMessages,
  parseMaybeJson,
  sessionIdOf,
  toolCallOf,
} from './genai.js';
export type {
  ChatMessage,
  ChatTranscript,
  GenAiFacts,
  GenAiKind,
  MessagePart,
  MessageSource,
  ToolCall,
} from './genai.js';
export { NotReplayable, REPLAY_OF_HEADER, replayRequestOf } from './replay.js';
export type { ReplayRequest } from './replay.js';

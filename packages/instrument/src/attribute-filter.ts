import { type UrlKeyKind, createUrlRedactor } from './url-redaction.js';

/**
 * Which attribute keys are message content (dropped unless content capture is on) and which are
 * secrets (always redacted). Pure functions so both the span and the log-record processors share
 * one definition.
 */

/** Replacement value of a redacted attribute: the key stays, so users see that it was there. */
export const REDACTED = '[REDACTED]';

/**
 * GenAI and LLM-framework attributes that carry prompts, completions, instructions or tool
 * payloads. Matched case-insensitively; `*` is a wildcard.
 */
export const CONTENT_ATTRIBUTE_PATTERNS: readonly string[] = [
  'gen_ai.input.messages',
  'gen_ai.output.messages',
  'gen_ai.system_instructions',
  'gen_ai.tool.definitions',
  'gen_ai.tool.call.arguments',
  'gen_ai.tool.call.result',
  'gen_ai.prompt',
  'gen_ai.prompt.*',
  'gen_ai.completion',
  'gen_ai.completion.*',
  'gen_ai.request.messages',
  'gen_ai.response.messages',
  'gen_ai.content.*',
  'gen_ai.event.content',
  'gen_ai.message.content',
  'system_prompt',
  'llm.input_messages*',
  'llm.output_messages*',
  'llm.prompts*',
  'input.value',
  'output.value',
];

/** Span events whose only purpose is to carry message content (older GenAI semconv and Strands). */
export const CONTENT_EVENT_PATTERNS: readonly string[] = [
  'gen_ai.user.message',
  'gen_ai.system.message',
  'gen_ai.assistant.message',
  'gen_ai.tool.message',
  'gen_ai.choice',
  'gen_ai.content.prompt',
  'gen_ai.content.completion',
  'gen_ai.client.inference.operation.details',
];

/** Secrets that are redacted whatever the settings say. */
export const ALWAYS_REDACTED_PATTERNS: readonly string[] = [
  'http.request.header.authorization',
  'http.request.header.proxy-authorization',
  'http.request.header.cookie',
  'http.response.header.set-cookie',
  'http.*.header.*api-key*',
  'http.*.header.*api_key*',
  'http.*.header.*apikey*',
  'http.*.header.*credential*',
  'http.*.header.*token*',
  'http.*.header.*secret*',
  'http.*.header.workloadaccesstoken',
  'http.*.header.x-amz-bedrock-agentcore-identity-wat',
  'http.*.header.x-amz-security-token',
  '*.authorization',
  '*password*',
  '*credential*',
  '*api_key*',
  '*api-key*',
  '*apikey*',
  '*secret_access_key*',
];

/** Compiles `*`-wildcard patterns into one case-insensitive matcher. */
export function createKeyMatcher(patterns: readonly string[]): (key: string) => boolean {
  const exact = new Set<string>();
  const wild: string[] = [];
  for (const p of patterns) {
    const lower = p.toLowerCase();
    if (lower.includes('*')) {
      wild.push(lower.split('*').map(escapeRegExp).join('.*'));
    } else {
      exact.add(lower);
    }
  }
  const re = wild.length > 0 ? new RegExp(`^(?:${wild.join('|')})$`, 'i') : undefined;
  return (key) => exact.has(key.toLowerCase()) || (re?.test(key) ?? false);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
}

/** Options of {@link createAttributeFilter}. */
export interface AttributeFilterOptions {
  /** Keep GenAI message content. */
  captureMessageContent: boolean;
  /** Extra key patterns to redact, on top of {@link ALWAYS_REDACTED_PATTERNS}. */
  redactAttributes: readonly string[];
  /** Extra query parameters redacted in URL-valued attributes (see url-redaction.ts). */
  redactQueryParams?: readonly string[];
}

/** What happens to one attribute key. */
export type AttributeAction = 'keep' | 'drop' | 'redact';

/** What is remembered per key: its action, and how a kept string value is checked for URLs. */
interface Decision {
  readonly action: AttributeAction;
  readonly url: UrlKeyKind;
}

/** An attribute filter: decides per key, and edits a mutable attribute bag in place. */
export interface AttributeFilter {
  actionFor(key: string): AttributeAction;
  /** Whether an event of this name is dropped as a whole. */
  dropsEvent(name: string): boolean;
  /** Applies the filter to `attributes` in place; returns whether anything changed. */
  apply(attributes: Record<string, unknown>): boolean;
}

/** `decide` remembered for the first 10,000 keys (keys are names, a bounded set in practice). */
function memoized<T>(decide: (key: string) => T): (key: string) => T {
  const cache = new Map<string, T>();
  return (key) => {
    let value = cache.get(key);
    if (value === undefined) {
      value = decide(key);
      if (cache.size < 10_000) cache.set(key, value);
    }
    return value;
  };
}

/** Builds the attribute filter for the given settings. Decisions are cached per key. */
export function createAttributeFilter(options: AttributeFilterOptions): AttributeFilter {
  const isSecret = createKeyMatcher([...ALWAYS_REDACTED_PATTERNS, ...options.redactAttributes]);
  const isContent = options.captureMessageContent
    ? () => false
    : createKeyMatcher(CONTENT_ATTRIBUTE_PATTERNS);
  const isContentEvent = options.captureMessageContent
    ? () => false
    : memoized(createKeyMatcher(CONTENT_EVENT_PATTERNS));
  const urls = createUrlRedactor(options.redactQueryParams);
  const decide = memoized((key: string): Decision => ({
    action: isSecret(key) ? 'redact' : isContent(key) ? 'drop' : 'keep',
    url: urls.keyKind(key),
  }));
  return {
    actionFor: (key) => decide(key).action,
    dropsEvent: isContentEvent,
    apply(attributes) {
      let changed = false;
      for (const key of Object.keys(attributes)) {
        const { action, url } = decide(key);
        if (action === 'drop') {
          delete attributes[key];
          changed = true;
        } else if (action === 'redact' && attributes[key] !== REDACTED) {
          attributes[key] = REDACTED;
          changed = true;
        } else if (action === 'keep') {
          const redacted = urls.redactValue(url, attributes[key]);
          if (redacted !== undefined) {
            attributes[key] = redacted;
            changed = true;
          }
        }
      }
      return changed;
    },
  };
}

/** Query-box completion: the word at the cursor, and the keys / keywords that complete it. */

export const QUERY_KEYWORDS = [
  'filter',
  'fields',
  'stats',
  'sort',
  'limit',
  'by',
  'asc',
  'desc',
  'and',
  'or',
  'not',
  'like',
  'in',
  'ispresent',
  'isempty',
  'count_distinct',
  'count',
  'avg',
  'sum',
  'min',
  'max',
  'pct',
  'bin',
] as const;

export interface CompletionContext {
  /** The partial word before the cursor (may be empty). */
  prefix: string;
  /** Where that word starts and ends (the whole word around the cursor is replaced). */
  start: number;
  end: number;
}

const WORD = /[A-Za-z0-9_.@$-]/;

export function completionContext(text: string, cursor: number): CompletionContext {
  let start = cursor;
  while (start > 0 && WORD.test(text[start - 1]!)) start--;
  let end = cursor;
  while (end < text.length && WORD.test(text[end]!)) end++;
  return { prefix: text.slice(start, cursor), start, end };
}

/** True when the cursor sits inside a string literal (no completion there). */
export function insideString(text: string, cursor: number): boolean {
  let quote: string | undefined;
  for (let i = 0; i < cursor; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
  }
  return quote !== undefined;
}

/**
 * Suggestions for a prefix: keys that start with it first, then keywords, then keys containing it;
 * a key is also matched without its `attributes.` / `resource.attributes.` prefix.
 */
export function suggest(keys: readonly string[], prefix: string, max = 12): string[] {
  const p = prefix.toLowerCase();
  if (p.length === 0) return [];
  const starts: string[] = [];
  const contains: string[] = [];
  for (const key of keys) {
    const k = key.toLowerCase();
    const bare = k.replace(/^(resource\.)?attributes\./, '');
    if (k === p) continue;
    if (k.startsWith(p) || bare.startsWith(p)) starts.push(key);
    else if (k.includes(p)) contains.push(key);
  }
  const words = QUERY_KEYWORDS.filter((w) => w.startsWith(p) && w !== p);
  return [...starts.sort(), ...words, ...contains.sort()].slice(0, max);
}

/** The text and cursor after accepting a suggestion. */
export function applyCompletion(
  text: string,
  ctx: CompletionContext,
  value: string,
): { text: string; cursor: number } {
  return { text: text.slice(0, ctx.start) + value + text.slice(ctx.end), cursor: ctx.start + value.length };
}

import { RE2 } from 're2-wasm';
import { QueryError } from './query-error.js';

/**
 * A `like` pattern. Regular expressions run on RE2 (re2-wasm): matching is linear in the input
 * whatever the pattern, so `/^(a+)+$/` cannot stall a query. Substrings (`like "text"`) need no
 * regex engine at all.
 */
export type Pattern =
  | { kind: 'substring'; text: string; test(s: string): boolean }
  | { kind: 'regex'; source: string; flags: string; test(s: string): boolean };

/** Flags a query may give a /regex/: case-insensitive, multi-line, dot matches newline. */
const FLAGS = /^[ims]*$/;
/**
 * Longest value a regex is matched against. re2-wasm works in a fixed 16 MiB WASM heap that holds
 * the input (as UTF-8) besides the compiled patterns; past this a value is refused, not truncated.
 */
export const MAX_REGEX_INPUT_CHARS = 1 << 20;
/** Most distinct regexes in one query (all of them stay compiled while it runs). */
export const MAX_REGEXES = 32;
/** Compiled patterns kept for reuse; the least recently used one is freed past this. */
const CACHE_SIZE = 2 * MAX_REGEXES;

type Wrapper = { delete?: () => void };
const cache = new Map<string, RE2>();

/** A compiled RE2, shared by queries asking for the same one (re2-wasm never frees it otherwise). */
function compiled(source: string, flags: string): RE2 {
  const key = `${flags}/${source}`;
  let re = cache.get(key);
  if (re) {
    cache.delete(key);
    cache.set(key, re);
    return re;
  }
  // RE2 wants the u flag; g and y make no sense for a filter.
  re = new RE2(source, `${flags}u`);
  cache.set(key, re);
  if (cache.size > CACHE_SIZE) {
    const [oldKey, old] = cache.entries().next().value!;
    cache.delete(oldKey);
    // The embind handle holds the program and its DFA cache in the WASM heap.
    (old as unknown as { wrapper?: Wrapper }).wrapper?.delete?.();
  }
  return re;
}

export function substringPattern(text: string): Pattern {
  return { kind: 'substring', text, test: (s) => s.includes(text) };
}

/** Compiles a /regex/ with RE2; QueryError (at `pos`) for what RE2 cannot run in linear time. */
export function regexPattern(source: string, flags: string, pos: number): Pattern {
  if (!FLAGS.test(flags) || new Set(flags).size !== flags.length) {
    throw new QueryError(`regular expression flags '${flags}' are not supported (use i, m or s)`, pos);
  }
  let re: RE2;
  try {
    re = compiled(source, flags);
  } catch (error) {
    throw new QueryError(
      `invalid regular expression: ${(error as Error).message.replace(/^Invalid regular expression: /, '')} (regular expressions run on RE2, in linear time: no backreferences or lookaround)`,
      pos,
    );
  }
  return {
    kind: 'regex',
    source,
    flags,
    test: (s) => {
      if (s.length > MAX_REGEX_INPUT_CHARS) {
        throw new QueryError(
          `a value of ${s.length} characters is too long for a regular expression (at most ${MAX_REGEX_INPUT_CHARS}); use like "substring"`,
          pos,
          [],
          'QueryError',
        );
      }
      return re.test(s);
    },
  };
}

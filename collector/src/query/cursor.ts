/**
 * The parser's place in a query's tokens, with the limits a whole query is held to (values,
 * conditions, regular expressions, nesting) and the one way a parse error is raised.
 */
import type { CalcCursor } from './calc.js';
import { type Token, tokenize } from './lexer.js';
import { QueryError } from './query-error.js';

const COMMANDS = ['filter', 'fields', 'display', 'stats', 'sort', 'limit'];
/** Words that are never a field name. */
const RESERVED = new Set(['and', 'or', 'not', 'like', 'in', 'by', 'as', 'asc', 'desc', ...COMMANDS]);
/** Deepest nesting of parentheses and `not` in a filter (deeper is no query a person writes). */
export const MAX_NESTING = 64;

function describe(t: Token): string {
  if (t.type === 'eof') return 'end of query';
  if (t.type === 'string') return `string "${t.text}"`;
  return `'${t.text}'`;
}

export class QueryCursor implements CalcCursor {
  readonly src: string;
  readonly tokens: Token[];
  i = 0;
  /** What the query has used so far of the limits parse rules hold it to. */
  readonly used = { values: 0, conditions: 0, regexes: new Set<string>() };
  private depth = 0;

  constructor(src: string) {
    this.src = src;
    this.tokens = tokenize(src);
  }

  peek(): Token {
    return this.tokens[this.i]!;
  }

  /** The token after the current one. */
  peekSecond(): Token {
    return this.tokens[this.i + 1]!;
  }

  next(): Token {
    return this.tokens[this.i++]!;
  }

  isWord(t: Token, w: string): boolean {
    return t.type === 'ident' && t.text.toLowerCase() === w;
  }

  isPunct(t: Token, p: string): boolean {
    return t.type === 'punct' && t.text === p;
  }

  /** Takes the current token when it is the word `w`. */
  takeWord(w: string): boolean {
    return this.isWord(this.peek(), w) ? (this.next(), true) : false;
  }

  fail(expected: string[], t = this.peek()): never {
    throw new QueryError(`expected ${expected.join(' or ')} but found ${describe(t)}`, t.pos, expected);
  }

  expectPunct(p: string): Token {
    return this.isPunct(this.peek(), p) ? this.next() : this.fail([`'${p}'`]);
  }

  /** The command word at the current token (the commands, `display` not offered). */
  command(): { word: string; token: Token } {
    const t = this.peek();
    const word = t.type === 'ident' ? t.text.toLowerCase() : '';
    if (!COMMANDS.includes(word)) return this.fail(COMMANDS.filter((c) => c !== 'display'));
    this.next();
    return { word, token: t };
  }

  field(): { path: string; pos: number } {
    const t = this.peek();
    if (t.type !== 'ident' || RESERVED.has(t.text.toLowerCase())) return this.fail(['a field name']);
    this.next();
    return { path: t.text, pos: t.pos };
  }

  /** Counts a level of nesting while `fn` parses it. */
  nested<T>(t: Token, fn: () => T): T {
    if (++this.depth > MAX_NESTING)
      throw new QueryError(`expression nests deeper than ${MAX_NESTING} levels`, t.pos, [], 'QueryError');
    try {
      return fn();
    } finally {
      this.depth--;
    }
  }

  /** Source text from token `from` up to (not including) the current token, spaced as written once. */
  textFrom(from: number): string {
    return tidy(this.src.slice(this.tokens[from]!.pos, this.tokens[this.i - 1]!.end));
  }
}

/** Runs of blanks as one space, none inside parentheses. */
export function tidy(text: string): string {
  return text.replace(/\s+/g, ' ').replace(/\(\s+/g, '(').replace(/\s+\)/g, ')');
}

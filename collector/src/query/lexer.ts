import { QueryError } from './query-error.js';

export type TokenType = 'ident' | 'number' | 'duration' | 'string' | 'regex' | 'punct' | 'eof';

export interface Token {
  type: TokenType;
  /** Identifier/punctuation text, string contents, regex source, or number text. */
  text: string;
  value?: number;
  flags?: string;
  pos: number;
  end: number;
}

const PUNCT = [
  '!=',
  '<=',
  '>=',
  '=~',
  '==',
  '&&',
  '||',
  '|',
  '!',
  '(',
  ')',
  '[',
  ']',
  ',',
  '=',
  '<',
  '>',
  '*',
  '+',
  '-',
  '/',
];
const IDENT_START = /[A-Za-z_@$]/;
const IDENT_PART = /[A-Za-z0-9_@$.-]/;
const NUMBER_RE = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/;
const UNIT_RE = /^[a-zA-Z]+/;

/**
 * A `/` starts a regular expression where a pattern is expected (after `=~` or `like`); anywhere
 * else it divides.
 */
function startsRegex(previous: Token | undefined): boolean {
  if (!previous) return false;
  if (previous.type === 'punct') return previous.text === '=~';
  return previous.type === 'ident' && previous.text.toLowerCase() === 'like';
}

/** Splits a query into tokens with their offsets. */
export function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const start = i;
    if (c === '"' || c === "'") {
      let out = '';
      i++;
      for (;;) {
        if (i >= src.length) throw new QueryError('unterminated string', start, [c]);
        const ch = src[i]!;
        if (ch === c) break;
        if (ch === '\\' && i + 1 < src.length) {
          const n = src[i + 1]!;
          out += n === 'n' ? '\n' : n === 't' ? '\t' : n;
          i += 2;
          continue;
        }
        out += ch;
        i++;
      }
      i++;
      tokens.push({ type: 'string', text: out, pos: start, end: i });
      continue;
    }
    if (c === '`') {
      const close = src.indexOf('`', i + 1);
      if (close < 0) throw new QueryError('unterminated back-quoted field name', start, ['`']);
      i = close + 1;
      tokens.push({ type: 'ident', text: src.slice(start + 1, close), pos: start, end: i });
      continue;
    }
    if (c === '/' && startsRegex(tokens.at(-1))) {
      let j = i + 1;
      let source = '';
      for (;;) {
        if (j >= src.length) throw new QueryError('unterminated regular expression', start, ['/']);
        const ch = src[j]!;
        if (ch === '/') break;
        if (ch === '\\' && j + 1 < src.length) {
          source += ch + src[j + 1]!;
          j += 2;
          continue;
        }
        source += ch;
        j++;
      }
      j++;
      const flags = /^[a-z]*/.exec(src.slice(j))![0];
      j += flags.length;
      tokens.push({ type: 'regex', text: source, flags, pos: start, end: j });
      i = j;
      continue;
    }
    const num = /[\d.-]/.test(c) ? NUMBER_RE.exec(src.slice(i)) : null;
    if (num && (c !== '-' || /[\d.]/.test(src[i + 1] ?? '')) && (c !== '.' || /\d/.test(src[i + 1] ?? ''))) {
      i += num[0].length;
      const unit = UNIT_RE.exec(src.slice(i));
      if (unit && !/^[eE]\d/.test(unit[0])) {
        i += unit[0].length;
        tokens.push({
          type: 'duration',
          text: num[0] + unit[0],
          value: Number(num[0]),
          flags: unit[0],
          pos: start,
          end: i,
        });
      } else {
        tokens.push({ type: 'number', text: num[0], value: Number(num[0]), pos: start, end: i });
      }
      continue;
    }
    if (IDENT_START.test(c)) {
      i++;
      while (i < src.length && IDENT_PART.test(src[i]!)) i++;
      // A trailing '.' or '-' belongs to no field name.
      while (/[.-]/.test(src[i - 1]!)) i--;
      tokens.push({ type: 'ident', text: src.slice(start, i), pos: start, end: i });
      continue;
    }
    const p = PUNCT.find((x) => src.startsWith(x, i));
    if (!p) throw new QueryError(`unexpected character '${c}'`, i);
    i += p.length;
    tokens.push({ type: 'punct', text: p === '==' ? '=' : p, pos: start, end: i });
  }
  tokens.push({ type: 'eof', text: '', pos: src.length, end: src.length });
  return tokens;
}

import { readRepoFile } from './repo.js';

/** A fenced shell block of the README, with the `<!-- readme-test: kind -->` marker before it, if any. */
export interface ShellBlock {
  marker: string | undefined;
  /** 1-based line of the opening fence. */
  line: number;
  commands: string[];
}

/** Shell blocks (```sh / ```bash / ```shell) of a Markdown text. */
export function shellBlocks(markdown: string): ShellBlock[] {
  const lines = markdown.split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(sh|bash|shell)\s*$/.exec(lines[i] ?? '');
    if (!open) continue;
    let before = i - 1;
    while (before >= 0 && (lines[before] ?? '').trim() === '') before--;
    const marker = /^<!--\s*readme-test:\s*([\w-]+)\s*-->$/.exec(lines[before] ?? '')?.[1];
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^```\s*$/.test(lines[j] ?? ''); j++) body.push(lines[j] ?? '');
    blocks.push({ marker, line: i + 1, commands: body.map(stripComment).filter((c) => c.trim() !== '') });
    i = j;
  }
  return blocks;
}

export function readmeBlocks(): ShellBlock[] {
  return shellBlocks(readRepoFile('README.md'));
}

/** Drops a trailing `# comment` that is outside quotes. */
function stripComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(line[i - 1] ?? ''))) {
      return line.slice(0, i).trimEnd();
    }
  }
  return line.trimEnd();
}

/**
 * Splits one shell command line into words the way sh would for the simple lines a README has:
 * single and double quotes, backslash escapes, `$VAR`/`$PWD` left as written, `&&` as its own word.
 */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unterminated ' in: ${line}`);
      word += line.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] === '\\' && j + 1 < line.length) j++;
        word += line[j];
      }
      if (j >= line.length) throw new Error(`unterminated " in: ${line}`);
      inWord = true;
      i = j;
    } else if (c === '\\' && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** One simple command: leading `VAR=value` assignments, then the program and its arguments. */
export interface SimpleCommand {
  env: Record<string, string>;
  argv: string[];
}

/** A line's simple commands (split on `&&`). */
export function simpleCommands(line: string): SimpleCommand[] {
  const out: SimpleCommand[] = [];
  let current: string[] = [];
  const flush = () => {
    const env: Record<string, string> = {};
    while (current.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(current[0]!)) {
      const [name, ...rest] = current.shift()!.split('=');
      env[name!] = rest.join('=');
    }
    if (current.length > 0) out.push({ env, argv: current });
    current = [];
  };
  for (const word of shellWords(line)) {
    if (word === '&&') flush();
    else current.push(word);
  }
  flush();
  return out;
}

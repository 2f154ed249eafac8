import { execFileSync } from 'node:child_process';
import { readRepoFile, repoRoot } from './repo.js';

/** A fenced shell block of the README, with the `<!-- readme-test: kind args -->` marker before it, if any. */
export interface ShellBlock {
  /** The marker's kind (`running-stack`, `background`, `ci`, `manual`, ...), undefined without one. */
  marker: string | undefined;
  /** What follows the kind in the marker (e.g. `ready=http://...` or the reason of `manual`). */
  markerArgs: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** One entry per command: comments dropped, `\`-continued lines joined. */
  commands: string[];
}

/**
 * Shell blocks (```sh / ```bash / ```shell) of a Markdown text, and blocks of any language marked
 * `<!-- readme-test: file <name> -->` (commands = [name, text]: a file the README's commands use).
 */
export function shellBlocks(markdown: string): ShellBlock[] {
  const lines = markdown.split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i] ?? '');
    if (!open) continue;
    let before = i - 1;
    while (before >= 0 && (lines[before] ?? '').trim() === '') before--;
    const marked = /^<!--\s*readme-test:\s*([\w-]+)\s*(.*?)\s*-->$/.exec(lines[before] ?? '');
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^```\s*$/.test(lines[j] ?? ''); j++) body.push(lines[j] ?? '');
    const marker = marked?.[1];
    const markerArgs = marked?.[2] ?? '';
    if (marker === 'file') {
      blocks.push({ marker, markerArgs, line: i + 1, commands: [markerArgs, `${body.join('\n')}\n`] });
    } else if (['sh', 'bash', 'shell'].includes(open[1] ?? '')) {
      blocks.push({ marker, markerArgs, line: i + 1, commands: joinLines(body) });
    }
    i = j;
  }
  return blocks;
}

/** Drops comments and blank lines, and joins a line ending in `\` with the next, as sh does. */
function joinLines(body: string[]): string[] {
  const commands: string[] = [];
  let pending = '';
  for (const raw of body) {
    const line = stripComment(raw);
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1).trimEnd()} `;
      continue;
    }
    const command = pending + (pending ? line.trimStart() : line);
    pending = '';
    if (command.trim() !== '') commands.push(command);
  }
  if (pending.trim() !== '') commands.push(pending.trimEnd());
  return commands;
}

/** The main README's shell blocks. */
export function readmeBlocks(): ShellBlock[] {
  return shellBlocks(readRepoFile('README.md'));
}

/** Every README.md git tracks, repo-relative, the main README first. */
export function readmeFiles(): string[] {
  const files = execFileSync('git', ['ls-files', '--', 'README.md', '*/README.md'], {
    cwd: repoRoot,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => f.endsWith('README.md'));
  return files.sort((a, b) => (a === 'README.md' ? -1 : b === 'README.md' ? 1 : a.localeCompare(b)));
}

/** Every README's shell blocks, each with its file. */
export function allReadmeBlocks(): (ShellBlock & { file: string })[] {
  return readmeFiles().flatMap((file) => shellBlocks(readRepoFile(file)).map((b) => ({ ...b, file })));
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
 * single and double quotes, backslash escapes, `$VAR`/`$PWD`/`$(cmd)` left as written, `&&` as its own word.
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
    } else if (c === '$' && line[i + 1] === '(') {
      // A command substitution stays as written (its spaces do not split the word).
      const end = line.indexOf(')', i + 2);
      if (end < 0) throw new Error(`unterminated $( in: ${line}`);
      word += line.slice(i, end + 1);
      inWord = true;
      i = end;
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

// Writes one benchmark's table into docs/benchmarks.md, between markers of its own, so every
// benchmark can be re-run alone without touching the others' sections.
import { readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import os from 'node:os';

const file = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'benchmarks.md');
const HEADER = `# Benchmarks

Each section is written by its script under \`bench/\` (\`npm run bench -- <name>\`), which runs the
peer or baseline in the same run and reports ratios. Figures are from a 2-core machine; compare the
ratios, not the absolute times.
`;

/** The machine's load averages (1, 5, 15 min) as the sections print them: "0.4, 1.0, 1.3". */
export function loadAverage() {
  return os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(', ');
}

/** Formats rows as a Markdown table. */
export function table(columns, rows) {
  const line = (cells) => `| ${cells.map((c) => String(c)).join(' | ')} |`;
  return [line(columns), line(columns.map(() => '---')), ...rows.map(line)].join('\n');
}

/** Replaces (or appends) the section `name` of docs/benchmarks.md with `markdown`. */
export function writeSection(name, title, markdown) {
  mkdirSync(dirname(file), { recursive: true });
  let text = existsSync(file) ? readFileSync(file, 'utf8') : HEADER;
  const start = `<!-- bench:${name}:start -->`;
  const end = `<!-- bench:${name}:end -->`;
  const machine = `${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
  const block = `${start}\n## ${title}\n\n_Recorded ${new Date().toISOString().slice(0, 10)} on ${machine}._\n\n${markdown.trim()}\n${end}`;
  const i = text.indexOf(start);
  const j = text.indexOf(end);
  text =
    i >= 0 && j > i
      ? text.slice(0, i) + block + text.slice(j + end.length)
      : `${text.trimEnd()}\n\n${block}\n`;
  writeFileSync(file, text);
  return file;
}

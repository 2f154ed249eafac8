#!/usr/bin/env node
// Stages one example as an image's /app from this checkout, with no registry: the example's built
// files, and under node_modules/ every package it needs at run time (dependencies, optional and
// peer dependencies that are installed), found as Node finds them and copied from the checkout's
// node_modules; workspace packages (@agentrt/*) as their published files (package.json "files").
//
//   node scripts/stage-example.mjs <example> <out dir>      (after: npx tsc -b examples/<example>)
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
} from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('..', import.meta.url));
const [example, out] = process.argv.slice(2);
if (!example || !out) fail('usage: node scripts/stage-example.mjs <example> <out dir>');
const exampleDir = join(repo, 'examples', example);
if (!existsSync(join(exampleDir, 'package.json'))) fail(`examples/${example} has no package.json`);

function fail(message) {
  console.error(`stage-example: ${message}`);
  process.exit(1);
}

const readPackage = (dir) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));

/** Whether a path is inside some node_modules (an installed package) rather than a workspace. */
const installed = (path) => path.split(sep).includes('node_modules');

/** Copies a workspace package as npm would publish it: package.json and its "files" entries. */
function copyPublished(from, to) {
  const pkg = readPackage(from);
  mkdirSync(to, { recursive: true });
  cpSync(join(from, 'package.json'), join(to, 'package.json'));
  for (const entry of (pkg.files ?? ['dist']).filter((f) => !f.startsWith('!'))) {
    if (!existsSync(join(from, entry)))
      fail(`${relative(repo, from)}/${entry} is missing: build it first (npx tsc -b)`);
    cpSync(join(from, entry), join(to, entry), {
      recursive: true,
      filter: (src) => !/\.(test|test-util|setup)\.|\.tsbuildinfo$/.test(src),
    });
  }
}

/** Copies an installed package without its own node_modules (those are visited as dependencies). */
function copyInstalled(from, to) {
  cpSync(from, to, {
    recursive: true,
    filter: (src) => src === from || !src.startsWith(join(from, 'node_modules')),
  });
}

/** Where Node finds `name` from `dir`: the first node_modules/<name> going up, or undefined. */
function find(name, dir) {
  for (let at = dir; ; at = dirname(at)) {
    const candidate = join(at, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (at === dirname(at)) return undefined;
  }
}

/** The staged path of a found package: its place relative to the example, else to the checkout. */
function destination(found) {
  const base = found.startsWith(exampleDir + sep) ? exampleDir : repo;
  return join(out, relative(base, found));
}

rmSync(out, { recursive: true, force: true });
copyPublished(exampleDir, out);
const placed = new Map(); // staged path → real path of what was copied there
const queue = [exampleDir];
while (queue.length > 0) {
  const from = queue.shift();
  const pkg = readPackage(from);
  const names = Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.peerDependencies });
  for (const name of names) {
    const found = find(name, from);
    if (!found) {
      if (pkg.dependencies?.[name]) fail(`${name} (needed by ${pkg.name}) is not installed: run npm ci`);
      continue; // an optional or peer dependency this checkout does not have
    }
    const real = realpathSync(found);
    const to = destination(found);
    const there = placed.get(to);
    if (there === real) continue;
    if (there) fail(`two packages would be staged at ${relative(out, to)}: ${there} and ${real}`);
    placed.set(to, real);
    if (installed(real)) copyInstalled(real, to);
    else copyPublished(real, to);
    queue.push(real);
  }
}
console.log(`${example}: ${placed.size} packages, ${Math.round(du(out) / 2 ** 20)} MiB staged in ${out}`);

function du(path) {
  const info = lstatSync(path, { throwIfNoEntry: false });
  if (!info) return 0;
  if (!info.isDirectory()) return info.size;
  let sum = 0;
  for (const entry of readdirSync(path)) sum += du(join(path, entry));
  return sum;
}

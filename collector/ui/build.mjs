// Bundles the trace explorer (Preact + TypeScript) into ui/dist: index.html, app.js, app.css.
// Everything the page needs is in those three files, so the collector serves it with no network.
//
//   node collector/ui/build.mjs            build (minified)
//   node collector/ui/build.mjs --if-stale build only when a source is newer than the bundle
//   node collector/ui/build.mjs --watch    rebuild on change (development)
import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';

const uiDir = dirname(fileURLToPath(import.meta.url));
const distDir = join(uiDir, 'dist');
/** Source folders whose changes make the bundle stale. */
const sourceDirs = [
  join(uiDir, 'src'),
  join(uiDir, '..', 'src', 'trace-model'),
  join(uiDir, '..', 'src', 'wire-types.ts'),
  join(uiDir, '..', 'src', 'store', 'summaries.ts'),
];

async function newestMtimeMs(path) {
  const info = await stat(path).catch(() => undefined);
  if (!info) return 0;
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const entry of await readdir(path)) newest = Math.max(newest, await newestMtimeMs(join(path, entry)));
  return newest;
}

/** True when dist is missing or older than any UI / trace-model source (or this script). */
export async function isUiStale() {
  const built = await stat(join(distDir, 'index.html')).catch(() => undefined);
  if (!built) return true;
  let newest = await newestMtimeMs(fileURLToPath(import.meta.url));
  for (const dir of sourceDirs) newest = Math.max(newest, await newestMtimeMs(dir));
  return newest > built.mtimeMs;
}

const options = (minify) => ({
  entryPoints: { app: join(uiDir, 'src', 'main.tsx') },
  bundle: true,
  outdir: distDir,
  format: 'esm',
  target: ['es2022'],
  platform: 'browser',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify,
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
  define: { 'process.env.NODE_ENV': '"production"' },
});

async function writeIndexHtml() {
  const template = await readFile(join(uiDir, 'src', 'index.html'), 'utf8');
  const hash = async (file) =>
    createHash('sha256')
      .update(await readFile(join(distDir, file)))
      .digest('hex')
      .slice(0, 10);
  const html = template
    .replace('%JS_VERSION%', await hash('app.js'))
    .replace('%CSS_VERSION%', await hash('app.css'));
  await writeFile(join(distDir, 'index.html'), html);
}

/** Builds the bundle; returns the raw and gzipped byte sizes of each output file. */
export async function buildUi({ minify = true } = {}) {
  await mkdir(distDir, { recursive: true });
  await esbuild.build(options(minify));
  await writeIndexHtml();
  const sizes = {};
  for (const file of ['index.html', 'app.js', 'app.css']) {
    const body = await readFile(join(distDir, file));
    sizes[file] = { bytes: body.length, gzipBytes: gzipSync(body, { level: 9 }).length };
  }
  return sizes;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = new Set(process.argv.slice(2));
  if (args.has('--watch')) {
    const ctx = await esbuild.context({
      ...options(false),
      plugins: [{ name: 'html', setup: (b) => b.onEnd(() => writeIndexHtml()) }],
    });
    await ctx.watch();
    process.stdout.write(`watching ${uiDir}/src\n`);
  } else if (args.has('--if-stale') && !(await isUiStale())) {
    process.stdout.write('ui/dist is up to date\n');
  } else {
    const sizes = await buildUi();
    const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
    for (const [file, s] of Object.entries(sizes)) {
      process.stdout.write(`ui/dist/${file}  ${kb(s.bytes)}  (gzip ${kb(s.gzipBytes)})\n`);
    }
  }
}

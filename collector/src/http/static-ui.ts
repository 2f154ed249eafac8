import { existsSync, statSync, createReadStream } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the web UI's build lands: collector/ui/dist (same relative place from src/ and dist/). */
export const DEFAULT_UI_DIR = fileURLToPath(new URL('../../ui/dist/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

const NOT_BUILT = `<!doctype html>
<html><head><meta charset="utf-8"><title>agentrt collector</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto">
<h1>agentrt collector</h1>
<p>The collector is running, but its web UI is not built.</p>
<p>Build it with <code>npm run build -w @agentrt/collector</code> and reload this page.
The HTTP API works without it: try <a href="/api/traces">/api/traces</a> or <code>agentrt traces query 'limit 10'</code>.</p>
</body></html>
`;

/**
 * Serves the UI's static files; unknown paths get index.html (client-side routes). When the UI is
 * not built, `/` explains how to build it.
 */
export function serveUi(uiDir: string, urlPath: string, res: ServerResponse, head: boolean): void {
  const index = join(uiDir, 'index.html');
  if (!existsSync(index)) {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' });
    res.end(head ? undefined : NOT_BUILT);
    return;
  }
  let rel: string;
  try {
    rel = normalize(decodeURIComponent(urlPath)).replace(/^([/\\])+/, '');
  } catch {
    rel = '';
  }
  let file = join(uiDir, rel);
  if (!file.startsWith(uiDir.endsWith(sep) ? uiDir : uiDir + sep) || !rel || !isFile(file)) file = index;
  const immutable = file !== index && /\/assets\//.test(file);
  res.writeHead(200, {
    'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
    'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    'x-content-type-options': 'nosniff',
  });
  if (head) res.end();
  else createReadStream(file).pipe(res);
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

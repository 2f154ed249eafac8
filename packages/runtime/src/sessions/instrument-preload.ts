import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * The built CommonJS-loadable preload of @agentrt/instrument (its `require` export), found from the
 * package's own manifest so that the condition flags of the current process (e.g. a test runner's
 * source condition) cannot send a worker to a .ts file.
 */
export function findInstrumentPreload(): string | undefined {
  let entry: string;
  try {
    entry = createRequire(import.meta.url).resolve('@agentrt/instrument');
  } catch {
    return undefined; // not installed
  }
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as {
      name?: string;
      exports?: Record<string, Record<string, string>>;
    };
    if (pkg.name !== '@agentrt/instrument') return undefined;
    const target = pkg.exports?.['./register'] ?? pkg.exports?.['.'];
    const file = target?.require ?? target?.default;
    return file && existsSync(join(dir, file)) ? join(dir, file) : undefined;
  }
  return undefined;
}

/**
 * Whether a worker environment loads the runtime's preload of @agentrt/instrument, which exports
 * the worker's spans and log records (its logger's and console's) itself.
 */
export function preloadsInstrument(env: Readonly<Record<string, string>>): boolean {
  const path = findInstrumentPreload();
  return path !== undefined && (env['NODE_OPTIONS'] ?? '').includes(`--require ${path}`);
}

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The agentrt checkout this CLI runs from: the nearest folder above this file whose package.json is
 * the workspace root (it lists `workspaces`). `agentrt dev` runs the collector, runtime and examples
 * from there. Undefined when the CLI is installed outside the repo.
 */
export function findRepoRoot(from = dirname(fileURLToPath(import.meta.url))): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { workspaces?: unknown; name?: unknown };
        if (pkg.name === 'agentrt' && Array.isArray(pkg.workspaces)) return dir;
      } catch {
        // An unreadable package.json is not the root; keep walking up.
      }
    }
    if (dirname(dir) === dir) return undefined;
  }
}

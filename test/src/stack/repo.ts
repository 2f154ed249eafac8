import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

/** The repository root (this file is test/src/stack/repo.ts, or test/dist/stack/repo.js once built). */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

export function readRepoFile(path: string): string {
  return readFileSync(new URL(path, `file://${repoRoot}`), 'utf8');
}

/** A YAML file of the repo, with merge keys (`<<: *anchor`) applied as Compose applies them. */
export function readRepoYaml(path: string): unknown {
  return parseYaml(readRepoFile(path), { merge: true });
}

import { readFileSync } from 'node:fs';

/** The CLI's own package.json (one folder above src/ and dist/ alike): its version and the Node it needs. */
export const cliPackage = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
  engines: { node: string };
};

#!/usr/bin/env node
// The `agentrt-instrument` bin. Checked in (not compiled) so that `npm install` on a fresh clone can
// link it into node_modules/.bin before anything is built; it runs dist/bin.js.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/bin.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write(
    'agentrt-instrument: @agentrt/instrument is not built yet; run `npm run build` in the agentrt repo first.\n',
  );
  process.exit(1);
}
await import(entry.href);

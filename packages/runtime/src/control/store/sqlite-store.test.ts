import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteStore } from './sqlite-store.js';
import { describeStoreContract } from './store-contract.test-util.js';

let dir = '';
describeStoreContract('sqlite', {
  open: async () => {
    dir = mkdtempSync(join(tmpdir(), 'agentrt-store-'));
    return createSqliteStore(dir);
  },
  reopen: async () => createSqliteStore(dir),
  eventually: async (check) => check(),
});

// The SQLite store held to the Backend contract (backend-contract.test-util.ts).
import { silentLogger } from '../../logger.js';
import { tempDir } from '../../testing.test-util.js';
import { openBackend } from '../backend.js';
import { runBackendContract } from '../backend-contract.test-util.js';
import { parseStoreSetting } from '../store.js';

runBackendContract('sqlite', async () => {
  const dir = tempDir();
  const backend = await openBackend(parseStoreSetting('sqlite'), {
    dataDir: dir.dir,
    logger: silentLogger,
    traceIndexPercent: 100,
    queryWorkers: 1,
    queryTimeoutMs: 10_000,
    integrityCheckMinutes: 0,
    ingestLingerMs: 0,
    spoolMb: 64,
    spoolShipMs: 1000,
  });
  return {
    backend,
    close: async () => {
      await backend.close();
      dir.remove();
    },
  };
});

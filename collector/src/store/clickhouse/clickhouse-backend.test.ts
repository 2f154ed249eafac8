// The ClickHouse store held to the Backend contract (backend-contract.test-util.ts), on a real
// clickhouse-server (Debian's 18.16) on a free port.
import { silentLogger } from '../../logger.js';
import { tempDir } from '../../testing.test-util.js';
import { openBackend } from '../backend.js';
import { runBackendContract } from '../backend-contract.test-util.js';
import { parseStoreSetting } from '../store.js';
import { clickHouseSkipReason, startClickHouse } from './clickhouse-harness.test-util.js';

runBackendContract(
  'clickhouse',
  async () => {
    const ch = await startClickHouse();
    const dir = tempDir();
    const backend = await openBackend(
      parseStoreSetting(`clickhouse://default:@127.0.0.1:${ch.nodes[0]!.httpPort}/agentrt_contract`),
      {
        dataDir: dir.dir,
        logger: silentLogger,
        traceIndexPercent: 100,
        queryWorkers: 1,
        queryTimeoutMs: 10_000,
        integrityCheckMinutes: 0,
        ingestLingerMs: 0,
        spoolMb: 64,
        spoolShipMs: 1000,
      },
    );
    return {
      backend,
      close: async () => {
        await backend.close();
        await ch.stop();
        dir.remove();
      },
    };
  },
  clickHouseSkipReason,
);

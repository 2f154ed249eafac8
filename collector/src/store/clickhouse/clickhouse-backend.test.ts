// The ClickHouse store held to the Backend contract (backend-contract.test-util.ts), on a real
// clickhouse-server (Debian's 18.16) on a free port.
import { openTestBackend, runBackendContract } from '../backend-contract.test-util.js';
import { clickHouseSkipReason, startClickHouse } from './clickhouse-harness.test-util.js';

runBackendContract(
  'clickhouse',
  async () => {
    const ch = await startClickHouse();
    return openTestBackend(`clickhouse://default:@127.0.0.1:${ch.nodes[0]!.httpPort}/agentrt_contract`, () =>
      ch.stop(),
    );
  },
  clickHouseSkipReason,
);

// The trace explorer suite (trace-explorer.suite.ts) on a ClickHouse-backed collector: a real
// clickhouse-server (Debian's 18.16 in CI) started on a free port.
import { traceExplorerSuite } from './trace-explorer.suite.js';

traceExplorerSuite('clickhouse');

// The trace explorer suite (trace-explorer.suite.ts) on the default SQLite store.
import { traceExplorerSuite } from './trace-explorer.suite.js';

traceExplorerSuite('sqlite');

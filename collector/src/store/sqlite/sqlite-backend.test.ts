// The SQLite store held to the Backend contract (backend-contract.test-util.ts).
import { openTestBackend, runBackendContract } from '../backend-contract.test-util.js';

runBackendContract('sqlite', () => openTestBackend('sqlite'));

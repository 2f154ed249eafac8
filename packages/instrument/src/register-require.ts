/**
 * Preload entry for `node --require @agentrt/instrument app.js` (CommonJS apps). ESM with no
 * top-level await, so Node 22.15+ loads it through require(esm). It registers no ESM loader hook:
 * CommonJS libraries are patched through require-in-the-middle.
 */
import { startFromEnvironment } from './preload.js';

startFromEnvironment();

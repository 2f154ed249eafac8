/**
 * Preload entry for `node --require @agentrt/instrument app.js`, for CommonJS and ES module apps
 * alike: the same as the `--import` entry (it has no top-level await, so Node 22.15+ loads it
 * through require(esm)). CommonJS libraries are patched through require-in-the-middle, and the
 * ESM loader hook (import-in-the-middle) is installed too, so `import { createServer } from
 * 'node:http'` in an ES module app is patched.
 */
import './register.js';

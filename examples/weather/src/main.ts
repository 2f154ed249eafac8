/**
 * The weather service: `node --require @agentrt/instrument dist/main.js`. The primary process forks
 * WEATHER_WORKERS (default 2) workers that share port PORT (default 8000).
 */
import cluster from 'node:cluster';
import { runPrimary, runWorker } from './cluster.js';
import { loadConfig } from './config.js';

const config = loadConfig();
if (cluster.isPrimary) runPrimary(config);
else await runWorker(config);

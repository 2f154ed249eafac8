/**
 * The weather MCP server: `node --require @agentrt/instrument dist/main.js`. Streamable HTTP at
 * POST /mcp on HOST:PORT (default 0.0.0.0:8001; the image and the runtime give it the MCP container contract's 8000).
 */
import { createServer } from 'node:http';
import { createLogger } from '@agentrt/example-models';
import { loadConfig } from './config.js';
import { createMcpHandler } from './mcp-server.js';

const config = loadConfig();
const logger = createLogger({
  name: 'mcp-server',
  level: config.logLevel,
  write: (line) => process.stdout.write(line),
});
for (const warning of config.warnings) logger.warn(warning);
const handle = createMcpHandler({ api: config.weatherApi, jsonResponse: config.jsonResponse, logger });
const server = createServer((req, res) => void handle(req, res));
server.listen(config.port, config.host, () => {
  const address = server.address();
  logger.info('listening', {
    host: config.host,
    port: typeof address === 'object' && address ? address.port : config.port,
    path: '/mcp',
  });
});
const stop = (signal: string) => {
  logger.info('stopping', { signal });
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), 5000).unref();
};
process.once('SIGTERM', () => stop('SIGTERM'));
process.once('SIGINT', () => stop('SIGINT'));

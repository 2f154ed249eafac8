export { type McpServerConfig, loadConfig } from './config.js';
export {
  type McpHandlerOptions,
  TRACER_NAME,
  createMcpHandler,
  createWeatherMcpServer,
} from './mcp-server.js';
export { WeatherToolError, getAlerts, getForecast } from './weather-tools.js';

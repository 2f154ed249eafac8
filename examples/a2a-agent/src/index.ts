export { type A2aAgentConfig, loadConfig } from './config.js';
export {
  type A2aAgentOptions,
  createA2aApp,
  createWeatherExecutor,
  messageText,
  textMessage,
  weatherAgentCard,
} from './app.js';

export {
  type CustomAgentOptions,
  type InvocationResponse,
  MODEL_LABEL,
  PROMPT_REQUIRED,
  createCustomAgentApp,
} from './app.js';
export { loadConfig } from './config.js';

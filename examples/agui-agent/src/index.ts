export {
  type AguiAgentOptions,
  type RunRequest,
  ValidationError,
  createAguiAgentServer,
  readRunInput,
} from './app.js';
export { loadConfig } from './config.js';

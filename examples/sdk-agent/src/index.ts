export { loadConfig } from './config.js';
export {
  DEFAULT_PROMPT,
  type SdkEntrypointOptions,
  type SdkEvent,
  type SdkPayload,
  type SdkResult,
  createSdkEntrypoint,
} from './entrypoint.js';

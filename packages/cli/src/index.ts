export { main } from './main.js';
export type { Command, CliIO } from './command.js';
export { UsageError } from './command.js';
export {
  startHotReload,
  type HotReloadAgent,
  type HotReloadOptions,
  type ReloadEvent,
  type ReloadRuntime,
} from './dev/hot-reload.js';
export { reportToCollector } from './dev/agent-reload.js';

export { main } from './main.js';
export type { Command, CliIO } from './command.js';
export { UsageError } from './command.js';

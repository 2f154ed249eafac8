import { type Command } from '../command.js';

/** Every subcommand, in the order `agentrt --help` lists them. Add one line per command file. */
export const commands: Command[] = [];

import { type Command } from '../command.js';
import { devCommand } from './dev.js';
import { doctorCommand } from './doctor.js';

/** Every subcommand, in the order `agentrt --help` lists them. Add one line per command file. */
export const commands: Command[] = [devCommand, doctorCommand];

import { type Command } from '../command.js';
import { devCommand } from './dev.js';
import { doctorCommand } from './doctor.js';
import { invokeCommand } from './invoke.js';
import { runtimeCommand } from './runtime.js';
import { collectorCommand } from './collector.js';
import { tracesCommand } from './traces.js';
import { sessionsCommand } from './sessions.js';
import { metricsCommand } from './metrics.js';
import { logsCommand } from './logs.js';
import { evalCommand } from './eval.js';
import { replayCommand } from './replay.js';
import { alertsCommand } from './alerts.js';

/** Every subcommand, in the order `agentrt --help` lists them. Add one line per command file. */
export const commands: Command[] = [
  devCommand,
  doctorCommand,
  runtimeCommand,
  invokeCommand,
  collectorCommand,
  tracesCommand,
  replayCommand,
  sessionsCommand,
  metricsCommand,
  logsCommand,
  alertsCommand,
  evalCommand,
];

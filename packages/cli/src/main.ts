import { cliPackage } from './cli-package.js';
import { type CliIO, type Command, UsageError } from './command.js';

function help(commands: readonly Command[]): string {
  const width = Math.max(0, ...commands.map((c) => c.name.length));
  const lines = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return [
    'Usage: agentrt <command> [options]',
    '',
    'Commands:',
    ...lines,
    '',
    'Run `agentrt <command> --help` for details, `agentrt --version` for the version.',
    '',
  ].join('\n');
}

/** Runs `agentrt` with the given arguments; resolves to the exit code. */
export async function main(argv: string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-v') {
    io.stdout(`${cliPackage.version}\n`);
    return 0;
  }
  // Loaded here, not at the top: the commands load node:sqlite, and bin.js runs `doctor` through
  // runCommand on a Node too old for it.
  const { commands } = await import('./commands/index.js');
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.stdout(help(commands));
    return name ? 0 : 2;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    io.stderr(`agentrt: unknown command '${name}'\n\n${help(commands)}`);
    return 2;
  }
  return runCommand(command, rest, io);
}

/** Runs one command: its --help, and its errors as a message and an exit code (2 for a usage error). */
export async function runCommand(command: Command, argv: string[], io: CliIO): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.stdout(command.usage.endsWith('\n') ? command.usage : `${command.usage}\n`);
    return 0;
  }
  try {
    return await command.run(argv, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`agentrt ${command.name}: ${error.message}\n\n${command.usage}\n`);
      return 2;
    }
    io.stderr(`agentrt ${command.name}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

import { type CliIO, UsageError } from './command.js';
import { commands } from './commands/index.js';

function help(): string {
  const width = Math.max(0, ...commands.map((c) => c.name.length));
  const lines = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return [
    'Usage: agentrt <command> [options]',
    '',
    'Commands:',
    ...lines,
    '',
    'Run `agentrt <command> --help` for details.',
    '',
  ].join('\n');
}

/** Runs `agentrt` with the given arguments; resolves to the exit code. */
export async function main(argv: string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.stdout(help());
    return name ? 0 : 2;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    io.stderr(`agentrt: unknown command '${name}'\n\n${help()}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout(command.usage.endsWith('\n') ? command.usage : `${command.usage}\n`);
    return 0;
  }
  try {
    return await command.run(rest, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`agentrt ${name}: ${error.message}\n\n${command.usage}\n`);
      return 2;
    }
    io.stderr(`agentrt ${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

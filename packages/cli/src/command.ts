import { parseArgs, type ParseArgsConfig } from 'node:util';

/** One `agentrt <name>` subcommand. Each lives in its own file under commands/ and is listed in commands/index.ts. */
export interface Command {
  name: string;
  /** One line for `agentrt --help`. */
  summary: string;
  /** Full usage text for `agentrt <name> --help`. */
  usage: string;
  /** Runs the command; resolves to the process exit code. */
  run(argv: string[], io: CliIO): Promise<number>;
}

/** Where a command writes; tests pass their own to read the output. */
export interface CliIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Lines typed in (`invoke --ws`); absent when the caller has no input. */
  stdin?: AsyncIterable<string | Buffer>;
}

/** A usage mistake: printed with the command's usage, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** `parseArgs` whose mistakes (unknown flag, missing value) become a UsageError: usage text, exit 2. */
export function parseCommandArgs<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
}

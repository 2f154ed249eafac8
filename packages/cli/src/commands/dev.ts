import { resolve } from 'node:path';
import { type CliIO, type Command, UsageError, parseCommandArgs } from '../command.js';
import { DEMO_CALLS, REFERENCE_AGENTS } from '../dev/reference-agents.js';
import { findRepoRoot } from '../dev/repo-root.js';
import { runDevStack, PORT_SETTINGS } from '../dev/stack.js';

const demoCalls = DEMO_CALLS.reduce((n, c) => n + c.calls, 0);
const usage = `Usage: agentrt dev [options]

Starts the whole local stack and keeps it running until Ctrl-C:
  collector   OTLP/HTTP ingest, query API and trace UI         (default port 4318)
  runtime     hosting runtime                                  (default port 8787)
  weather     the weather service, 2 workers                   (default port 8000)
  weather-api fixture weather API, when the model is offline   (any free port)
and registers ${REFERENCE_AGENTS.length} reference agents in the runtime: ${REFERENCE_AGENTS.map((a) => a.name).join(', ')}.
Every agent runs under @agentrt/instrument and exports to the collector.

Options:
  --demo                   send ${demoCalls} sample invocations: ${DEMO_CALLS.map((c) => c.kind).join(', ')}
  --data-dir <dir>         where data and logs live (env AGENTRT_DATA_DIR; default <repo>/.data)
  --no-ui                  leave the trace UI links out of the summary (headless use, scripts)
  --no-watch               do not rebuild and reload the agents when their sources change
  --host <addr>            address the services bind to (env AGENTRT_DEV_HOST; default 127.0.0.1)
  --collector-port <n>     env AGENTRT_COLLECTOR_PORT (default 4318)
  --runtime-port <n>       env AGENTRT_RUNTIME_PORT (default 8787)
  --weather-port <n>       env AGENTRT_WEATHER_PORT (default 8000)
  --weather-api-port <n>   env AGENTRT_WEATHER_API_PORT (default: any free port)
  --verbose                print every service's log lines, prefixed with its name
  --stop-grace-ms <ms>     wait this long after SIGTERM before SIGKILL (default 5000)
  --ready-timeout-ms <ms>  how long a service may take to become ready (default 60000)
  --repo-root <dir>        run the stack from this agentrt checkout (default: the one of this CLI)

The model provider is chosen from the environment: AGENTRT_MODEL_PROVIDER, else bedrock with AWS
credentials, openai with OPENAI_API_KEY, else offline (no credentials, no network needed).`;

function integer(raw: string | undefined, fallback: number, what: string, min: number, max: number): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(`${what} must be an integer from ${min} to ${max}, got '${raw}'`);
  }
  return value;
}

function port(
  flag: string | undefined,
  env: CliIO['env'],
  setting: { flag: string; env: string },
  fallback: number,
  min = 1,
): number {
  if (flag !== undefined) return integer(flag, fallback, setting.flag, min, 65535);
  return integer(env[setting.env], fallback, setting.env, min, 65535);
}

export const devCommand: Command = {
  name: 'dev',
  summary: 'start the local stack: collector + UI, runtime with the reference agents, weather service',
  usage,
  async run(argv, io) {
    const { values } = parseCommandArgs({
      args: argv,
      allowNegative: true,
      options: {
        demo: { type: 'boolean', default: false },
        'data-dir': { type: 'string' },
        ui: { type: 'boolean', default: true },
        watch: { type: 'boolean', default: true },
        host: { type: 'string' },
        'collector-port': { type: 'string' },
        'runtime-port': { type: 'string' },
        'weather-port': { type: 'string' },
        'weather-api-port': { type: 'string' },
        verbose: { type: 'boolean', default: false },
        'stop-grace-ms': { type: 'string' },
        'ready-timeout-ms': { type: 'string' },
        'repo-root': { type: 'string' },
      },
    });
    const repoRoot = values['repo-root'] ? resolve(io.cwd, values['repo-root']) : findRepoRoot();
    if (!repoRoot) {
      io.stderr(
        "agentrt dev: run it from an agentrt checkout (it starts the repo's collector, runtime and examples).\n",
      );
      return 1;
    }
    const dataDir = resolve(
      io.cwd,
      values['data-dir'] ?? io.env['AGENTRT_DATA_DIR'] ?? resolve(repoRoot, '.data'),
    );
    const options = {
      repoRoot,
      dataDir,
      host: values.host ?? io.env['AGENTRT_DEV_HOST'] ?? '127.0.0.1',
      collectorPort: port(values['collector-port'], io.env, PORT_SETTINGS.collector, 4318),
      runtimePort: port(values['runtime-port'], io.env, PORT_SETTINGS.runtime, 8787),
      weatherPort: port(values['weather-port'], io.env, PORT_SETTINGS.weather, 8000),
      weatherApiPort: port(values['weather-api-port'], io.env, PORT_SETTINGS['weather-api'], 0, 0),
      demo: values.demo,
      ui: values.ui,
      watch: values.watch,
      verbose: values.verbose,
      stopGraceMs: integer(values['stop-grace-ms'], 5_000, '--stop-grace-ms', 0, 600_000),
      readyTimeoutMs: integer(values['ready-timeout-ms'], 60_000, '--ready-timeout-ms', 1, 3_600_000),
    };
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      return await runDevStack({
        ...options,
        env: io.env,
        stdout: io.stdout,
        stderr: io.stderr,
        interactive: Boolean(process.stdout.isTTY) && !io.env['CI'],
        signal: stop.signal,
      });
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  },
};

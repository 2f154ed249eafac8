import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { runDemo, type DemoResult } from './demo.js';
import { chooseModelProvider, type ModelProviderChoice } from './model-provider.js';
import { findFreePort, findPortOwner, isPortFree } from './ports.js';
import { createProgress, type Progress } from './progress.js';
import { REFERENCE_AGENTS } from './reference-agents.js';
import { startAgentReload } from './agent-reload.js';
import { registerAgents, type RegisteredRuntime } from './runtime-registration.js';
import {
  agentEnv,
  builtFiles,
  stackServices,
  type BuiltFiles,
  type StackPlan,
  type StackService,
} from './stack-services.js';
import { indent, summary } from './stack-summary.js';
import { hostForUrl } from './stack-urls.js';
import { createSupervisor, ServiceStartError, type Supervisor } from './supervisor.js';

export { BUILT_ENTRIES } from './stack-services.js';

export interface DevStackOptions {
  repoRoot: string;
  dataDir: string;
  /** Address every service binds to (127.0.0.1 by default). */
  host: string;
  collectorPort: number;
  runtimePort: number;
  weatherPort: number;
  /** The offline fixture weather API; 0 = any free port. */
  weatherApiPort: number;
  demo: boolean;
  /** Show the trace UI's links in the summary (the collector serves the UI at / either way). */
  ui: boolean;
  /** Rebuild an agent when its sources change; its sessions then restart on the new code. */
  watch: boolean;
  verbose: boolean;
  /** Environment the services inherit (credentials, OTEL_*, AGENTRT_MODEL_PROVIDER...). */
  env: NodeJS.ProcessEnv;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Animate progress (stdout is a terminal). */
  interactive: boolean;
  stopGraceMs: number;
  readyTimeoutMs: number;
  /** Aborts when the user asks to stop (Ctrl-C, SIGTERM). */
  signal: AbortSignal;
}

/** How to change each port: the flag and the env var, named in the port-in-use message. */
export const PORT_SETTINGS = {
  collector: { flag: '--collector-port', env: 'AGENTRT_COLLECTOR_PORT' },
  runtime: { flag: '--runtime-port', env: 'AGENTRT_RUNTIME_PORT' },
  weather: { flag: '--weather-port', env: 'AGENTRT_WEATHER_PORT' },
  'weather-api': { flag: '--weather-api-port', env: 'AGENTRT_WEATHER_API_PORT' },
} as const;

/** Written while the stack runs, removed on a clean stop: what runs where (for scripts, doctor and tests). */
export interface DevState {
  pid: number;
  startedAt: string;
  dataDir: string;
  urls: Record<string, string>;
  services: { name: string; pid: number; logFile: string }[];
  runtimes: RegisteredRuntime[];
  sessionId: string;
  modelProvider: ModelProviderChoice;
  demo?: DemoResult[];
}

export const DEV_STATE_FILE = 'dev-state.json';
/** Kept across starts: the fixture weather API's port, so the agents' registered environment stays the same. */
const DEV_PORTS_FILE = 'dev-ports.json';

/**
 * The fixture weather API's port: the flag/env when given; else the one an earlier start used, when it
 * is still free (so the registered runtimes do not get a new version on every start); else any.
 */
async function chooseWeatherApiPort(options: DevStackOptions): Promise<number> {
  if (options.weatherApiPort !== 0) return options.weatherApiPort;
  const bindHost = options.host === '0.0.0.0' ? '127.0.0.1' : options.host;
  const file = join(options.dataDir, DEV_PORTS_FILE);
  const previous = await readFile(file, 'utf8')
    .then((text) => (JSON.parse(text) as { weatherApi?: unknown }).weatherApi)
    .catch(() => undefined);
  const port =
    typeof previous === 'number' && (await isPortFree(options.host, previous))
      ? previous
      : await findFreePort(bindHost);
  await mkdir(options.dataDir, { recursive: true });
  await writeFile(file, `${JSON.stringify({ weatherApi: port })}\n`);
  return port;
}

/**
 * `agentrt dev`: starts the collector, the fixture weather API (offline), the weather service and the
 * hosting runtime with the reference agents registered, every agent under @agentrt/instrument and
 * exporting to the collector; prints one summary; runs until `signal` aborts or a service dies; then
 * stops everything. Resolves to the exit code.
 */
export async function runDevStack(options: DevStackOptions): Promise<number> {
  const files = builtFiles(options.repoRoot);
  if (reportMissingBuild(options, files)) return 1;
  const model = chooseModelProvider(options.env);
  const plan = await planStack(options, files, model);
  if (!plan) return 1;
  const run = await superviseStack(options);
  // Ctrl-C while services are still starting: stop them now rather than after their health checks
  // (a starting service that is stopped makes its start() fail at once).
  const stopWhileStarting = () => void run.supervisor.stopAll();
  options.signal.addEventListener('abort', stopWhileStarting, { once: true });
  options.stdout(
    `agentrt dev: starting the local stack (data: ${options.dataDir}, model: ${model.provider})\n`,
  );
  try {
    const state = await startStack(run, plan, model);
    if (!state) {
      await run.stop();
      return 0;
    }
    options.signal.removeEventListener('abort', stopWhileStarting);
    await announce(run, plan, state);
  } catch (error) {
    if (!run.aborted()) reportStartFailure(options, run.logDir, error);
    await run.stop();
    return run.aborted() ? 0 : 1;
  }
  return waitUntilStopped(run);
}

/** Says which built files are missing and how to build them; true when any is. */
function reportMissingBuild(options: DevStackOptions, files: BuiltFiles): boolean {
  const missing = Object.values(files).filter((file) => !existsSync(file));
  if (missing.length === 0) return false;
  const list = missing.map((f) => `  ${relative(options.repoRoot, f)}`).join('\n');
  options.stderr(
    `agentrt dev: these built files are missing:\n${list}\n` +
      `Build first: npm run build (or just npm start, which builds and then runs agentrt dev).\n`,
  );
  return true;
}

/** Where every service listens and what the agents call; undefined (after saying why) on a port in use. */
async function planStack(
  options: DevStackOptions,
  files: BuiltFiles,
  model: ModelProviderChoice,
): Promise<StackPlan | undefined> {
  const external = options.env['WEATHER_API_BASE_URL']?.trim();
  const useFixture = !external && model.provider === 'offline';
  if (await reportPortConflicts(options, useFixture)) return undefined;
  const weatherApiPort = useFixture ? await chooseWeatherApiPort(options) : 0;
  const urlHost = hostForUrl(options.host);
  const urls: Record<string, string> = {
    collector: `http://${urlHost}:${options.collectorPort}`,
    runtime: `http://${urlHost}:${options.runtimePort}`,
    weather: `http://${urlHost}:${options.weatherPort}`,
  };
  if (useFixture) urls['weather-api'] = `http://${urlHost}:${weatherApiPort}`;
  return { options, files, urls, weatherApi: external || urls['weather-api'], weatherApiPort };
}

/** Checks every port at once, so one message names every conflict and how to move it; true on any. */
async function reportPortConflicts(options: DevStackOptions, useFixture: boolean): Promise<boolean> {
  const wanted: [keyof typeof PORT_SETTINGS, number][] = [
    ['collector', options.collectorPort],
    ['runtime', options.runtimePort],
    ['weather', options.weatherPort],
  ];
  if (useFixture && options.weatherApiPort !== 0) wanted.push(['weather-api', options.weatherApiPort]);
  const conflicts: string[] = [];
  for (const [name, port] of wanted) {
    if (await isPortFree(options.host, port)) continue;
    const owner = await findPortOwner(port);
    const by = owner ? ` by pid ${owner.pid} (${owner.command.slice(0, 120)})` : '';
    const setting = PORT_SETTINGS[name];
    conflicts.push(
      `  port ${port} (${name}) is in use${by}.\n` +
        `    Stop that process, or pick another port: ${setting.flag} <port> or ${setting.env}=<port>.`,
    );
  }
  if (conflicts.length === 0) return false;
  options.stderr(`agentrt dev: cannot start, ports in use on ${options.host}:\n${conflicts.join('\n')}\n`);
  return true;
}

/** The supervised stack while it runs: its services, its progress lines, how it ends. */
interface StackRun {
  options: DevStackOptions;
  supervisor: Supervisor;
  progress: Progress;
  logDir: string;
  /** Resolves when a started service exits on its own (`crashed` then says which and how). */
  crash: Promise<void>;
  crashed(): { name: string; how: string; tail: string } | undefined;
  aborted(): boolean;
  /** Stops the reloader and every service, and removes the state file. */
  stop(): Promise<void>;
  reloader?: { close(): void };
}

async function superviseStack(options: DevStackOptions): Promise<StackRun> {
  const logDir = join(options.dataDir, 'logs');
  for (const dir of ['collector', 'runtime', 'logs'])
    await mkdir(join(options.dataDir, dir), { recursive: true });
  let crashed: { name: string; how: string; tail: string } | undefined;
  let wakeOnCrash: () => void = () => {};
  const crash = new Promise<void>((resolve) => (wakeOnCrash = resolve));
  const supervisor = createSupervisor({
    logDir,
    stopGraceMs: options.stopGraceMs,
    onLine: options.verbose ? (name, line) => options.stderr(`[${name}] ${line}\n`) : undefined,
    onUnexpectedExit: (name, code, signal, tail) => {
      crashed ??= { name, how: signal ? `signal ${signal}` : `code ${code}`, tail };
      wakeOnCrash();
    },
  });
  const progress = createProgress({ write: options.stdout, interactive: options.interactive });
  const run: StackRun = {
    options,
    supervisor,
    progress,
    logDir,
    crash,
    crashed: () => crashed,
    aborted: () => options.signal.aborted,
    stop: async () => {
      run.reloader?.close();
      await inStep(progress, 'stopping services', () => supervisor.stopAll());
      await rm(join(options.dataDir, DEV_STATE_FILE), { force: true });
    },
  };
  return run;
}

/** Runs `work` as a progress step: ✔ with `detail` of its result, ✖ when it throws. */
async function inStep<T>(
  progress: Progress,
  label: string,
  work: () => Promise<T>,
  detail?: (t: T) => string,
) {
  const step = progress.step(label);
  try {
    const result = await work();
    step.done(detail?.(result));
    return result;
  } catch (error) {
    step.fail();
    throw error;
  }
}

/**
 * Starts the services (the collector first, everything else exports to it; then the rest side by
 * side), registers the reference agents and runs the demo. Undefined when the user stopped it.
 */
async function startStack(
  run: StackRun,
  plan: StackPlan,
  model: ModelProviderChoice,
): Promise<DevState | undefined> {
  const startOne = ({ spec, label, detail }: StackService) =>
    inStep(
      run.progress,
      label,
      () => run.supervisor.start(spec),
      () => detail,
    );
  const [first, ...rest] = stackServices(plan);
  if (first && !run.aborted()) await startOne(first);
  if (!run.aborted()) await Promise.all(rest.map(startOne));
  const runtimes = run.aborted() ? [] : await registerReferenceAgents(run, plan);
  const demo = plan.options.demo && !run.aborted() ? await demoStep(run, plan, runtimes) : undefined;
  if (run.aborted()) return undefined;
  return {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    dataDir: plan.options.dataDir,
    urls: plan.urls,
    services: run.supervisor.services.map(({ name, pid, logFile }) => ({ name, pid, logFile })),
    runtimes,
    sessionId: `dev-session-${randomUUID()}`,
    modelProvider: model,
    ...(demo ? { demo } : {}),
  };
}

function registerReferenceAgents(run: StackRun, plan: StackPlan): Promise<RegisteredRuntime[]> {
  const agents = REFERENCE_AGENTS.map((agent) => ({
    name: agent.name,
    dir: join(plan.options.repoRoot, 'examples', agent.example),
    description: agent.description,
    environmentVariables: agentEnv(plan, agent.serviceName),
    ...(agent.serverProtocol ? { serverProtocol: agent.serverProtocol } : {}),
  }));
  return inStep(
    run.progress,
    'reference agents registered in the runtime',
    () => registerAgents(plan.urls['runtime']!, agents, plan.options.readyTimeoutMs),
    (runtimes) => runtimes.map((r) => `${r.name}${r.reused ? ' (reused)' : ''}`).join(', '),
  );
}

async function demoStep(
  run: StackRun,
  plan: StackPlan,
  runtimes: RegisteredRuntime[],
): Promise<DemoResult[]> {
  const step = run.progress.step('demo invocations');
  const demo = await runDemo({
    runtimeUrl: plan.urls['runtime']!,
    weatherUrl: plan.urls['weather']!,
    runtimes,
  });
  const failed = demo.filter((d) => !d.ok);
  if (failed.length > 0) step.fail(`${demo.length - failed.length}/${demo.length} as expected`);
  else step.done(`${demo.length} sent`);
  for (const result of demo)
    run.options.stdout(`    ${result.ok ? '✔' : '✖'} ${result.name}: ${result.detail}\n`);
  return demo;
}

/** Writes the state file, prints the summary, and starts watching the agents' sources when asked. */
async function announce(run: StackRun, plan: StackPlan, state: DevState): Promise<void> {
  const { options } = run;
  await writeFile(join(options.dataDir, DEV_STATE_FILE), `${JSON.stringify(state, null, 2)}\n`);
  const { urls } = plan;
  const { runtimes, sessionId, modelProvider: model, demo } = state;
  const useFixtureWeatherApi = plan.weatherApiPort !== 0;
  options.stdout(
    summary({ options, urls, runtimes, sessionId, model, demo, logDir: run.logDir, useFixtureWeatherApi }),
  );
  if (!options.watch) return;
  const { repoRoot, stdout } = options;
  run.reloader = await startAgentReload({
    repoRoot,
    runtimes,
    runtimeUrl: urls['runtime']!,
    collectorUrl: urls['collector']!,
    stdout,
  });
  stdout(
    `Watching the agents' sources: a save rebuilds the agent and restarts its sessions on the new code.\n`,
  );
}

function reportStartFailure(options: DevStackOptions, logDir: string, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  options.stderr(`\nagentrt dev: ${message}\n`);
  if (!(error instanceof ServiceStartError)) return;
  if (error.tail) options.stderr(`  last output of ${error.service}:\n${indent(error.tail)}\n`);
  options.stderr(`  full log: ${join(logDir, `${error.service}.log`)}\n`);
}

/** Runs until the user stops it (exit code 0) or a service dies (1, with its last lines); then stops all. */
async function waitUntilStopped(run: StackRun): Promise<number> {
  const { signal, stdout, stderr } = run.options;
  await Promise.race([
    run.crash,
    new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      signal.addEventListener('abort', () => resolve(), { once: true });
    }),
  ]);
  const crashed = run.crashed();
  if (crashed && !run.aborted()) {
    const { name, how, tail } = crashed;
    stderr(
      `\nagentrt dev: ${name} stopped unexpectedly (${how}); stopping the rest.\n` +
        (tail ? `  last output of ${name}:\n${indent(tail)}\n` : '') +
        `  full log: ${join(run.logDir, `${name}.log`)}\n`,
    );
    await run.stop();
    return 1;
  }
  stdout('\n');
  await run.stop();
  stdout('agentrt dev: stopped.\n');
  return 0;
}

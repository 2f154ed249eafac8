import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runDemo, type DemoResult } from './demo.js';
import { answersHttp, answersOk } from './http.js';
import { chooseModelProvider, type ModelProviderChoice } from './model-provider.js';
import { findFreePort, findPortOwner, isPortFree } from './ports.js';
import { createProgress } from './progress.js';
import { REFERENCE_AGENTS } from './reference-agents.js';
import { startAgentReload } from './agent-reload.js';
import { registerAgents, type RegisteredRuntime } from './runtime-registration.js';
import { indent, summary } from './stack-summary.js';
import { hostForUrl, loopbackPorts, pageOrigins } from './stack-urls.js';
import { createSupervisor, ServiceStartError, type ServiceSpec } from './supervisor.js';

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

/** Settings the hosted agents need from the developer's environment (the runtime gives workers a clean one). */
const AGENT_PASSTHROUGH_ENV = [
  'AGENTRT_MODEL_PROVIDER',
  'AGENTRT_MODEL_ID',
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT',
] as const;

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

/** The built files the stack runs, relative to the repo root; all must exist (`npm run build`). */
export const BUILT_ENTRIES = {
  collector: 'collector/dist/main.js',
  runtime: 'packages/runtime/dist/main.js',
  weather: 'examples/weather/dist/main.js',
  weatherApiFixture: 'examples/models/dist/fixtures/index.js',
  instrument: 'packages/instrument/dist/register-require.js',
  sdkAgent: 'examples/sdk-agent/dist/main.js',
  customAgent: 'examples/custom-agent/dist/main.js',
  mcpServer: 'examples/mcp-server/dist/main.js',
  a2aAgent: 'examples/a2a-agent/dist/main.js',
} as const;

function entries(repoRoot: string) {
  const at = (path: string) => join(repoRoot, path);
  return {
    collector: at(BUILT_ENTRIES.collector),
    runtime: at(BUILT_ENTRIES.runtime),
    weather: at(BUILT_ENTRIES.weather),
    weatherApiFixture: at(BUILT_ENTRIES.weatherApiFixture),
    instrument: at(BUILT_ENTRIES.instrument),
    sdkAgent: at(BUILT_ENTRIES.sdkAgent),
    customAgent: at(BUILT_ENTRIES.customAgent),
    mcpServer: at(BUILT_ENTRIES.mcpServer),
    a2aAgent: at(BUILT_ENTRIES.a2aAgent),
  };
}

/** A one-line node program that serves the fixture weather API until SIGTERM (no file of its own needed). */
function weatherApiProgram(fixtureModule: string, host: string, port: number): string {
  return [
    `const { startWeatherApiFixture } = await import(${JSON.stringify(pathToFileURL(fixtureModule).href)});`,
    `const api = await startWeatherApiFixture({ host: ${JSON.stringify(host)}, port: ${port} });`,
    `console.log(JSON.stringify({ level: 'info', msg: 'fixture weather API listening', url: api.url }));`,
    `const stop = () => api.close().then(() => process.exit(0));`,
    `process.once('SIGTERM', stop); process.once('SIGINT', stop);`,
  ].join('\n');
}

/**
 * `agentrt dev`: starts the collector, the fixture weather API (offline), the weather service and the
 * hosting runtime with the reference agents registered, every agent under @agentrt/instrument and
 * exporting to the collector; prints one summary; runs until `signal` aborts or a service dies; then
 * stops everything. Resolves to the exit code.
 */
export async function runDevStack(options: DevStackOptions): Promise<number> {
  const { stdout, stderr, repoRoot, dataDir, host } = options;
  const files = entries(repoRoot);
  const missing = Object.values(files).filter((file) => !existsSync(file));
  if (missing.length > 0) {
    stderr(
      `agentrt dev: these built files are missing:\n${missing.map((f) => `  ${relative(repoRoot, f)}`).join('\n')}\n` +
        `Build first: npm run build (or just npm start, which builds and then runs agentrt dev).\n`,
    );
    return 1;
  }

  const model = chooseModelProvider(options.env);
  const externalWeatherApi = options.env['WEATHER_API_BASE_URL']?.trim();
  const useFixtureWeatherApi = !externalWeatherApi && model.provider === 'offline';

  // Ports first, all at once, so one message names every conflict and how to move it.
  const wanted: [keyof typeof PORT_SETTINGS, number][] = [
    ['collector', options.collectorPort],
    ['runtime', options.runtimePort],
    ['weather', options.weatherPort],
  ];
  if (useFixtureWeatherApi && options.weatherApiPort !== 0)
    wanted.push(['weather-api', options.weatherApiPort]);
  const conflicts: string[] = [];
  for (const [name, port] of wanted) {
    if (await isPortFree(host, port)) continue;
    const owner = await findPortOwner(port);
    const by = owner ? ` by pid ${owner.pid} (${owner.command.slice(0, 120)})` : '';
    const setting = PORT_SETTINGS[name];
    conflicts.push(
      `  port ${port} (${name}) is in use${by}.\n` +
        `    Stop that process, or pick another port: ${setting.flag} <port> or ${setting.env}=<port>.`,
    );
  }
  if (conflicts.length > 0) {
    stderr(`agentrt dev: cannot start, ports in use on ${host}:\n${conflicts.join('\n')}\n`);
    return 1;
  }
  const weatherApiPort = useFixtureWeatherApi ? await chooseWeatherApiPort(options) : 0;

  const logDir = join(dataDir, 'logs');
  await mkdir(join(dataDir, 'collector'), { recursive: true });
  await mkdir(join(dataDir, 'runtime'), { recursive: true });
  await mkdir(logDir, { recursive: true });

  const urlHost = hostForUrl(host);
  const urls: Record<string, string> = {
    collector: `http://${urlHost}:${options.collectorPort}`,
    runtime: `http://${urlHost}:${options.runtimePort}`,
    weather: `http://${urlHost}:${options.weatherPort}`,
  };
  if (useFixtureWeatherApi) urls['weather-api'] = `http://${urlHost}:${weatherApiPort}`;
  const collectorUrl = urls['collector']!;

  let crashed: { name: string; how: string; tail: string } | undefined;
  let wakeOnCrash: () => void = () => {};
  const crash = new Promise<void>((resolve) => (wakeOnCrash = resolve));
  const supervisor = createSupervisor({
    logDir,
    stopGraceMs: options.stopGraceMs,
    onLine: options.verbose ? (name, line) => stderr(`[${name}] ${line}\n`) : undefined,
    onUnexpectedExit: (name, code, signal, tail) => {
      crashed ??= { name, how: signal ? `signal ${signal}` : `code ${code}`, tail };
      wakeOnCrash();
    },
  });
  const progress = createProgress({ write: stdout, interactive: options.interactive });

  // What every agent gets: the preload, and the collector as the OTLP endpoint.
  const baseEnv: NodeJS.ProcessEnv = {
    ...options.env,
    OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl,
    AGENTRT_DATA_DIR: undefined,
    NODE_OPTIONS: undefined,
  };
  const node = process.execPath;
  const ready = options.readyTimeoutMs;
  const specs: { spec: ServiceSpec; label: string; detail: string }[] = [
    {
      label: 'collector',
      detail: `${collectorUrl}`,
      spec: {
        name: 'collector',
        command: node,
        args: [files.collector],
        env: {
          ...baseEnv,
          AGENTRT_COLLECTOR_HOST: host,
          AGENTRT_COLLECTOR_PORT: String(options.collectorPort),
          AGENTRT_DATA_DIR: join(dataDir, 'collector'),
        },
        ready: () => answersOk(`${collectorUrl}/healthz`),
        readyTimeoutMs: ready,
        stopLast: true,
      },
    },
  ];
  if (useFixtureWeatherApi) {
    specs.push({
      label: 'fixture weather API (offline)',
      detail: urls['weather-api']!,
      spec: {
        name: 'weather-api',
        command: node,
        args: ['--input-type=module', '-e', weatherApiProgram(files.weatherApiFixture, host, weatherApiPort)],
        env: baseEnv,
        cwd: repoRoot,
        ready: () => answersHttp(`${urls['weather-api']}/`),
        readyTimeoutMs: ready,
      },
    });
  }
  specs.push(
    {
      label: 'weather service',
      detail: urls['weather']!,
      spec: {
        name: 'weather',
        command: node,
        args: ['--require', '@agentrt/instrument', files.weather],
        cwd: repoRoot,
        env: {
          ...baseEnv,
          OTEL_SERVICE_NAME: 'weather',
          PORT: String(options.weatherPort),
          HOST: host,
          WEATHER_API_BASE_URL: externalWeatherApi || urls['weather-api'],
        },
        ready: () => answersOk(`${urls['weather']}/health`),
        readyTimeoutMs: ready,
      },
    },
    {
      label: 'hosting runtime',
      detail: urls['runtime']!,
      spec: {
        name: 'runtime',
        command: node,
        args: [files.runtime],
        cwd: repoRoot,
        env: {
          ...baseEnv,
          OTEL_SERVICE_NAME: 'agentrt-runtime',
          // Dashboards of a local stack want fresher points than AgentCore's one minute.
          OTEL_METRIC_EXPORT_INTERVAL: '10000',
          AGENTRT_RUNTIME_HOST: host,
          AGENTRT_RUNTIME_PORT: String(options.runtimePort),
          AGENTRT_DATA_DIR: join(dataDir, 'runtime'),
          AGENTRT_INSTRUMENT_WORKERS: '1',
          // Each invocation's request on its span: \`agentrt replay\` and the trace view's Replay send it again.
          AGENTRT_CAPTURE_REQUESTS: '1',
          // The collector's pages (the Inspector) call the runtime from the browser, across origins.
          AGENTRT_RUNTIME_ALLOWED_ORIGINS: pageOrigins(collectorUrl, options.collectorPort).join(','),
          // The examples run where they are built: a rebuild reaches the next new session.
          AGENTRT_FILE_ARTIFACTS: 'live',
          // Sandboxed sessions reach host loopback only on these ports: the weather API the agents call.
          AGENTRT_SANDBOX_HOST_PORTS: loopbackPorts([externalWeatherApi || urls['weather-api']]).join(','),
        },
        ready: () => answersOk(`${urls['runtime']}/ping`),
        readyTimeoutMs: ready,
      },
    },
  );

  const stateFile = join(dataDir, DEV_STATE_FILE);
  let reloader: { close(): void } | undefined;
  const stopEverything = async (): Promise<void> => {
    reloader?.close();
    const step = progress.step('stopping services');
    await supervisor.stopAll();
    await rm(stateFile, { force: true });
    step.done();
  };
  const aborted = () => options.signal.aborted;
  // Ctrl-C while services are still starting: stop them now rather than after their health checks
  // (a starting service that is stopped makes its start() fail at once).
  const stopWhileStarting = () => void supervisor.stopAll();
  options.signal.addEventListener('abort', stopWhileStarting, { once: true });

  stdout(`agentrt dev: starting the local stack (data: ${dataDir}, model: ${model.provider})\n`);
  try {
    // The collector first (everything else exports to it), then the rest side by side.
    const startOne = async ({ spec, label, detail }: (typeof specs)[number]) => {
      const step = progress.step(label);
      try {
        await supervisor.start(spec);
        step.done(detail);
      } catch (error) {
        step.fail();
        throw error;
      }
    };
    const [first, ...rest] = specs;
    if (first && !aborted()) await startOne(first);
    if (!aborted()) await Promise.all(rest.map(startOne));
    let runtimes: RegisteredRuntime[] = [];
    const sessionId = `dev-session-${randomUUID()}`;
    if (!aborted()) {
      const step = progress.step('reference agents registered in the runtime');
      // Session workers get a clean environment from the runtime (plus AWS credentials), so what the
      // agents need travels as the runtime's environment variables.
      const agentEnv = (name: string): Record<string, string> => {
        const vars: Record<string, string> = { OTEL_SERVICE_NAME: name };
        const weatherApi = externalWeatherApi || urls['weather-api'];
        if (weatherApi) vars['WEATHER_API_BASE_URL'] = weatherApi;
        for (const key of AGENT_PASSTHROUGH_ENV) {
          const value = options.env[key]?.trim();
          if (value) vars[key] = value;
        }
        return vars;
      };
      try {
        runtimes = await registerAgents(
          urls['runtime']!,
          REFERENCE_AGENTS.map((agent) => ({
            name: agent.name,
            dir: join(repoRoot, 'examples', agent.example),
            description: agent.description,
            environmentVariables: agentEnv(agent.serviceName),
            ...(agent.serverProtocol ? { serverProtocol: agent.serverProtocol } : {}),
          })),
          options.readyTimeoutMs,
        );
        step.done(runtimes.map((r) => `${r.name}${r.reused ? ' (reused)' : ''}`).join(', '));
      } catch (error) {
        step.fail();
        throw error;
      }
    }
    let demo: DemoResult[] | undefined;
    if (options.demo && !aborted()) {
      const step = progress.step('demo invocations');
      demo = await runDemo({ runtimeUrl: urls['runtime']!, weatherUrl: urls['weather']!, runtimes });
      const failed = demo.filter((d) => !d.ok);
      if (failed.length > 0) step.fail(`${demo.length - failed.length}/${demo.length} as expected`);
      else step.done(`${demo.length} sent`);
      for (const result of demo) stdout(`    ${result.ok ? '✔' : '✖'} ${result.name}: ${result.detail}\n`);
    }
    if (aborted()) {
      await stopEverything();
      return 0;
    }
    const state: DevState = {
      pid: process.pid,
      startedAt: new Date().toISOString(),
      dataDir,
      urls,
      services: supervisor.services.map(({ name, pid, logFile }) => ({ name, pid, logFile })),
      runtimes,
      sessionId,
      modelProvider: model,
      ...(demo ? { demo } : {}),
    };
    options.signal.removeEventListener('abort', stopWhileStarting);
    await writeFile(stateFile, `${JSON.stringify(state, null, 2)}\n`);
    stdout(summary({ options, urls, runtimes, sessionId, model, demo, logDir, useFixtureWeatherApi }));
    if (options.watch) {
      reloader = await startAgentReload({
        repoRoot,
        runtimes,
        runtimeUrl: urls['runtime']!,
        collectorUrl,
        stdout,
      });
      stdout(
        `Watching the agents' sources: a save rebuilds the agent and restarts its sessions on the new code.\n`,
      );
    }
  } catch (error) {
    if (!aborted()) {
      const message = error instanceof Error ? error.message : String(error);
      stderr(`\nagentrt dev: ${message}\n`);
      if (error instanceof ServiceStartError && error.tail)
        stderr(`  last output of ${error.service}:\n${indent(error.tail)}\n`);
      if (error instanceof ServiceStartError) stderr(`  full log: ${join(logDir, `${error.service}.log`)}\n`);
    }
    await stopEverything();
    return aborted() ? 0 : 1;
  }

  await Promise.race([
    crash,
    new Promise<void>((resolve) => {
      if (options.signal.aborted) resolve();
      options.signal.addEventListener('abort', () => resolve(), { once: true });
    }),
  ]);
  if (crashed && !aborted()) {
    const { name, how, tail } = crashed;
    stderr(
      `\nagentrt dev: ${name} stopped unexpectedly (${how}); stopping the rest.\n` +
        (tail ? `  last output of ${name}:\n${indent(tail)}\n` : '') +
        `  full log: ${join(logDir, `${name}.log`)}\n`,
    );
    await stopEverything();
    return 1;
  }
  stdout('\n');
  await stopEverything();
  stdout('agentrt dev: stopped.\n');
  return 0;
}

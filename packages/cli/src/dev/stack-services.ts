import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { answersHttp, answersOk } from './http.js';
import { loopbackPorts, pageOrigins } from './stack-urls.js';
import type { DevStackOptions } from './stack.js';
import type { ServiceSpec } from './supervisor.js';

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

export type BuiltFiles = Record<keyof typeof BUILT_ENTRIES, string>;

/** BUILT_ENTRIES as absolute paths under the repo root. */
export function builtFiles(repoRoot: string): BuiltFiles {
  const files = {} as BuiltFiles;
  for (const [name, path] of Object.entries(BUILT_ENTRIES))
    files[name as keyof BuiltFiles] = join(repoRoot, path);
  return files;
}

/** Settings the hosted agents need from the developer's environment (the runtime gives workers a clean one). */
const AGENT_PASSTHROUGH_ENV = [
  'AGENTRT_MODEL_PROVIDER',
  'AGENTRT_MODEL_ID',
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT',
] as const;

/** What the stack's services are started from: the options, where each one listens, what it calls. */
export interface StackPlan {
  options: DevStackOptions;
  files: BuiltFiles;
  /** collector, runtime, weather and (offline) weather-api, as URLs. */
  urls: Record<string, string>;
  /** The weather API the agents call: the developer's (WEATHER_API_BASE_URL) or the offline fixture. */
  weatherApi: string | undefined;
  /** The offline fixture weather API's port, 0 when it does not run. */
  weatherApiPort: number;
}

/** A service of the stack, with the progress line it is started under. */
export interface StackService {
  spec: ServiceSpec;
  label: string;
  detail: string;
}

/**
 * The services in start order: the collector (first, everything exports to it; stopped last), the
 * offline fixture weather API when used, the weather service and the hosting runtime.
 */
export function stackServices(plan: StackPlan): StackService[] {
  return [
    collectorService(plan),
    ...(plan.weatherApiPort ? [weatherApiService(plan)] : []),
    weatherService(plan),
    runtimeService(plan),
  ];
}

/** What every service gets: the developer's environment, the collector as the OTLP endpoint. */
function baseEnv(plan: StackPlan): NodeJS.ProcessEnv {
  return {
    ...plan.options.env,
    OTEL_EXPORTER_OTLP_ENDPOINT: plan.urls['collector'],
    AGENTRT_DATA_DIR: undefined,
    NODE_OPTIONS: undefined,
  };
}

/** A node service of the stack; ready once `check` passes at its URL + `health`. */
function service(
  plan: StackPlan,
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  health: string,
  check: (url: string) => Promise<boolean> = answersOk,
) {
  const { options } = plan;
  return {
    name,
    command: process.execPath,
    args,
    cwd: options.repoRoot,
    env: { ...baseEnv(plan), ...env },
    ready: () => check(`${plan.urls[name]}${health}`),
    readyTimeoutMs: options.readyTimeoutMs,
  } satisfies ServiceSpec;
}

function collectorService(plan: StackPlan): StackService {
  const { options } = plan;
  const env = {
    AGENTRT_COLLECTOR_HOST: options.host,
    AGENTRT_COLLECTOR_PORT: String(options.collectorPort),
    AGENTRT_DATA_DIR: join(options.dataDir, 'collector'),
  };
  const spec = { ...service(plan, 'collector', [plan.files.collector], env, '/healthz'), stopLast: true };
  return { label: 'collector', detail: plan.urls['collector']!, spec };
}

function weatherApiService(plan: StackPlan): StackService {
  const program = weatherApiProgram(plan.files.weatherApiFixture, plan.options.host, plan.weatherApiPort);
  // The fixture answers 404 at /: any HTTP answer means it listens.
  const spec = service(plan, 'weather-api', ['--input-type=module', '-e', program], {}, '/', answersHttp);
  return { label: 'fixture weather API (offline)', detail: plan.urls['weather-api']!, spec };
}

function weatherService(plan: StackPlan): StackService {
  const env = {
    OTEL_SERVICE_NAME: 'weather',
    PORT: String(plan.options.weatherPort),
    HOST: plan.options.host,
    WEATHER_API_BASE_URL: plan.weatherApi,
  };
  const args = ['--require', '@agentrt/instrument', plan.files.weather];
  return {
    label: 'weather service',
    detail: plan.urls['weather']!,
    spec: service(plan, 'weather', args, env, '/health'),
  };
}

function runtimeService(plan: StackPlan): StackService {
  const { options } = plan;
  const env = {
    OTEL_SERVICE_NAME: 'agentrt-runtime',
    // Dashboards of a local stack want fresher points than AgentCore's one minute.
    OTEL_METRIC_EXPORT_INTERVAL: '10000',
    AGENTRT_RUNTIME_HOST: options.host,
    AGENTRT_RUNTIME_PORT: String(options.runtimePort),
    AGENTRT_DATA_DIR: join(options.dataDir, 'runtime'),
    AGENTRT_INSTRUMENT_WORKERS: '1',
    // Each invocation's request on its span: `agentrt replay` and the trace view's Replay send it again.
    AGENTRT_CAPTURE_REQUESTS: '1',
    // The collector's pages (the Inspector) call the runtime from the browser, across origins.
    AGENTRT_RUNTIME_ALLOWED_ORIGINS: pageOrigins(plan.urls['collector']!, options.collectorPort).join(','),
    // The examples run where they are built: a rebuild reaches the next new session.
    AGENTRT_FILE_ARTIFACTS: 'live',
    // Sandboxed sessions reach host loopback only on these ports: the weather API the agents call.
    AGENTRT_SANDBOX_HOST_PORTS: loopbackPorts([plan.weatherApi]).join(','),
  };
  const spec = service(plan, 'runtime', [plan.files.runtime], env, '/ping');
  return { label: 'hosting runtime', detail: plan.urls['runtime']!, spec };
}

/** The environment a reference agent is registered with: session workers get a clean one from the runtime. */
export function agentEnv(plan: StackPlan, serviceName: string): Record<string, string> {
  const vars: Record<string, string> = { OTEL_SERVICE_NAME: serviceName };
  if (plan.weatherApi) vars['WEATHER_API_BASE_URL'] = plan.weatherApi;
  for (const key of AGENT_PASSTHROUGH_ENV) {
    const value = plan.options.env[key]?.trim();
    if (value) vars[key] = value;
  }
  return vars;
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

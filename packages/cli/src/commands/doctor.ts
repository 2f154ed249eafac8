import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Isolation } from '@agentrt/runtime';
import { type CliIO, type Command, UsageError, parseCommandArgs } from '../command.js';
import { answersOk } from '../dev/http.js';
import { chooseModelProvider } from '../dev/model-provider.js';
import { findPortOwner, isPortFree } from '../dev/ports.js';
import { findRepoRoot } from '../dev/repo-root.js';
import type { BUILT_ENTRIES, PORT_SETTINGS } from '../dev/stack.js';
import { NODE_FLOOR, nodeVersionProblem } from '../node-version.js';

export type CheckStatus = 'ok' | 'warn' | 'fail';

/** One finding of `agentrt doctor`. `fail` makes the exit code non-zero. */
export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  /** What to do about it, in plain words (warn and fail only). */
  fix?: string;
}

const usage = `Usage: agentrt doctor [--json] [--collector-url <url>] [--timeout-ms <ms>]

Checks what the local stack and instrumented agents need, and says how to fix what is missing:
  node        Node.js >= ${NODE_FLOOR} (on an older Node, doctor says so and skips build, ports and bwrap)
  build       the built files agentrt dev runs (npm run build)
  ports       4318 collector, 8787 runtime, 8000 weather: free, or used by agentrt itself
  collector   reachable, and a test span sent over OTLP comes back through the query API
  telemetry   OTEL_* settings that silently turn telemetry off
  model       which model provider the agents will use, and whether its credentials are there
  bwrap       bubblewrap, for isolated runtime sessions
  docker      the Docker engine, for docker compose and registry-image runtimes

The collector is ${'OTEL_EXPORTER_OTLP_ENDPOINT'} (default http://127.0.0.1:4318) unless --collector-url is given.
Ports follow AGENTRT_COLLECTOR_PORT, AGENTRT_RUNTIME_PORT and AGENTRT_WEATHER_PORT.
Exit code 1 when a required piece is missing (a ✖ line), 0 otherwise; --json prints the checks as JSON.`;

function checkNode(): Check {
  const version = `v${process.versions.node}`;
  return !nodeVersionProblem()
    ? { name: 'node', status: 'ok', detail: `${version} (>= ${NODE_FLOOR} required)` }
    : {
        name: 'node',
        status: 'fail',
        detail: `${version} is older than ${NODE_FLOOR} (node:sqlite, require(esm) and the test runner need it)`,
        fix:
          `Install Node ${NODE_FLOOR}+ (or 24). In the agentrt repo, npm start, npm test and npx agentrt ` +
          'fetch Node 24 into .node/ and use it; `. scripts/ensure-node.sh` puts it on your PATH.',
      };
}

/** The modules the build, port and bwrap checks read; they load node:sqlite, so need a new enough Node. */
async function loadStackModules() {
  const [stack, runtime] = await Promise.all([import('../dev/stack.js'), import('@agentrt/runtime')]);
  return { stack, runtime };
}
type StackModules = Awaited<ReturnType<typeof loadStackModules>>;

function checkBuild(builtEntries: typeof BUILT_ENTRIES): Check {
  const root = findRepoRoot();
  if (!root) return { name: 'build', status: 'ok', detail: 'not in an agentrt checkout; nothing to build' };
  const needed = Object.values(builtEntries);
  const missing = needed.filter((file) => !existsSync(join(root, file)));
  return missing.length === 0
    ? { name: 'build', status: 'ok', detail: 'built (dist/ present)' }
    : {
        name: 'build',
        status: 'warn',
        detail: `missing ${missing.join(', ')}`,
        fix: 'Run `npm run build` in the repo (npm start builds too).',
      };
}

async function checkPort(
  service: keyof typeof PORT_SETTINGS,
  setting: (typeof PORT_SETTINGS)[keyof typeof PORT_SETTINGS],
  port: number,
  ours: () => Promise<boolean>,
): Promise<Check> {
  const name = `port ${port}`;
  if (await isPortFree('127.0.0.1', port)) return { name, status: 'ok', detail: `free (${service})` };
  if (await ours()) return { name, status: 'ok', detail: `in use by the agentrt ${service} (running)` };
  const owner = await findPortOwner(port);
  return {
    name,
    status: 'warn',
    detail: `in use by ${owner ? `pid ${owner.pid} (${owner.command.slice(0, 100)})` : 'another program'}; the ${service} cannot start there`,
    fix: `Stop that program, or move the ${service}: agentrt dev ${setting.flag} <port> (or ${setting.env}=<port>).`,
  };
}

/** Sends one span over OTLP/HTTP JSON and reads it back through the collector's trace API. */
async function spanRoundTrip(endpoint: string, timeoutMs: number): Promise<{ ok: boolean; detail: string }> {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  const nowNs = BigInt(Date.now()) * 1_000_000n;
  const body = {
    resourceSpans: [
      {
        // Marked synthetic: the collector's default trace list hides it (the user's data stays theirs).
        resource: {
          attributes: [
            { key: 'service.name', value: { stringValue: 'agentrt-doctor' } },
            { key: 'agentrt.synthetic', value: { stringValue: 'doctor' } },
          ],
        },
        scopeSpans: [
          {
            scope: { name: 'agentrt-doctor' },
            spans: [
              {
                traceId,
                spanId,
                name: 'agentrt doctor round trip',
                kind: 1,
                startTimeUnixNano: String(nowNs),
                endTimeUnixNano: String(nowNs + 1_000_000n),
                attributes: [{ key: 'agentrt.synthetic', value: { stringValue: 'doctor' } }],
              },
            ],
          },
        ],
      },
    ],
  };
  const started = Date.now();
  const res = await fetch(`${endpoint}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  }).catch((error: Error) => error);
  if (res instanceof Error) return { ok: false, detail: `POST /v1/traces failed: ${res.message}` };
  const text = await res.text();
  if (!res.ok) return { ok: false, detail: `POST /v1/traces answered ${res.status}: ${text.slice(0, 200)}` };
  const deadline = started + timeoutMs;
  while (Date.now() < deadline) {
    const found = await fetch(`${endpoint}/api/traces/${traceId}`, {
      signal: AbortSignal.timeout(timeoutMs),
    }).catch(() => undefined);
    if (found?.ok && (await found.text()).includes(spanId)) {
      return { ok: true, detail: `test span stored and queried back in ${Date.now() - started} ms` };
    }
    await found?.body?.cancel();
    await delay(100);
  }
  return {
    ok: false,
    detail: `the collector accepted trace ${traceId} but /api/traces/${traceId} did not return it`,
  };
}

async function checkCollector(url: string | undefined, env: CliIO['env'], timeoutMs: number): Promise<Check> {
  const configured = url ?? env['OTEL_EXPORTER_OTLP_ENDPOINT']?.trim();
  const endpoint = (configured || 'http://127.0.0.1:4318').replace(/\/+$/, '');
  if (!(await answersOk(`${endpoint}/healthz`, {}, timeoutMs))) {
    return {
      name: 'collector',
      // A collector the user configured and cannot be reached is a real problem; the default one
      // simply is not started yet.
      status: configured ? 'fail' : 'warn',
      detail: `no agentrt collector answers at ${endpoint}; instrumented agents will drop their telemetry (retried, then lost without an error)`,
      fix: configured
        ? `Start the collector at ${endpoint}, or fix OTEL_EXPORTER_OTLP_ENDPOINT.`
        : 'Start the stack with `npm start` (or `agentrt dev`), or just the collector with `agentrt collector`.',
    };
  }
  const trip = await spanRoundTrip(endpoint, timeoutMs);
  return trip.ok
    ? { name: 'collector', status: 'ok', detail: `${endpoint}: ${trip.detail}` }
    : {
        name: 'collector',
        status: 'fail',
        detail: `${endpoint} is up but ${trip.detail}`,
        fix: 'Look at the collector log (.data/logs/collector.log under agentrt dev) for ingest errors.',
      };
}

function checkTelemetrySwitches(env: CliIO['env']): Check {
  const off: string[] = [];
  if (env['OTEL_SDK_DISABLED']?.trim().toLowerCase() === 'true') off.push('OTEL_SDK_DISABLED=true');
  if (env['OTEL_TRACES_EXPORTER']?.trim().toLowerCase() === 'none') off.push('OTEL_TRACES_EXPORTER=none');
  if (env['OTEL_TRACES_SAMPLER']?.trim() === 'always_off') off.push('OTEL_TRACES_SAMPLER=always_off');
  if (off.length === 0)
    return { name: 'telemetry', status: 'ok', detail: 'no OTEL_* setting turns telemetry off' };
  return {
    name: 'telemetry',
    status: 'warn',
    detail: `${off.join(', ')}: instrumented agents in this shell will send no traces`,
    fix: `Unset ${off.map((o) => o.split('=')[0]).join(' and ')}.`,
  };
}

function checkModel(env: CliIO['env']): Check {
  const choice = chooseModelProvider(env);
  const has = (name: string) => Boolean(env[name]?.trim());
  if (choice.provider === 'bedrock') {
    const creds =
      (has('AWS_ACCESS_KEY_ID') && has('AWS_SECRET_ACCESS_KEY')) ||
      [
        'AWS_PROFILE',
        'AWS_WEB_IDENTITY_TOKEN_FILE',
        'AWS_CONTAINER_CREDENTIALS_FULL_URI',
        'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
      ].some(has);
    if (!creds) {
      return {
        name: 'model',
        status: 'fail',
        detail: 'bedrock is selected but no AWS credentials are in the environment',
        fix: 'Export AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), or use AGENTRT_MODEL_PROVIDER=offline.',
      };
    }
    if (!has('AWS_REGION') && !has('AWS_DEFAULT_REGION')) {
      return {
        name: 'model',
        status: 'warn',
        detail: `bedrock (${choice.reason}) but no AWS_REGION`,
        fix: 'Export AWS_REGION (for example us-east-1) where the model is enabled.',
      };
    }
  }
  if (choice.provider === 'openai' && !has('OPENAI_API_KEY') && !has('OPENAI_BASE_URL')) {
    return {
      name: 'model',
      status: 'fail',
      detail: 'openai is selected but neither OPENAI_API_KEY nor OPENAI_BASE_URL is set',
      fix: 'Export OPENAI_API_KEY (or OPENAI_BASE_URL for a local Ollama/vLLM), or use AGENTRT_MODEL_PROVIDER=offline.',
    };
  }
  const offline = choice.provider === 'offline' ? '; deterministic answers, no network needed' : '';
  return { name: 'model', status: 'ok', detail: `${choice.provider} (${choice.reason})${offline}` };
}

/** Runs a program and resolves with its exit code and output; code -1 when it cannot be run. */
function run(command: string, args: string[], timeoutMs: number): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    let output = '';
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs });
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', () => resolve({ code: -1, output }));
    child.once('close', (code) => resolve({ code: code ?? -1, output: output.trim() }));
  });
}

async function checkBwrap(
  { detectIsolation, resolveRuntimeConfig }: StackModules['runtime'],
  timeoutMs: number,
): Promise<Check> {
  const version = await run('bwrap', ['--version'], timeoutMs);
  // The runtime's own decision, from the same env: what it says here is what sessions will get.
  const config = resolveRuntimeConfig();
  let isolation: Isolation;
  try {
    isolation = detectIsolation({
      setting: config.isolation,
      sandboxIds: { uid: config.sandboxUid, gid: config.sandboxGid },
    });
  } catch (error) {
    return {
      name: 'bwrap',
      status: 'fail',
      detail: (error as Error).message,
      fix: 'On Debian/Ubuntu: sudo apt-get install bubblewrap socat slirp4netns',
    };
  }
  if (isolation.mode !== 'bwrap')
    return {
      name: 'bwrap',
      status: 'warn',
      detail: `sessions run as plain processes: ${isolation.off.join('; ')}`,
      fix: 'On Debian/Ubuntu: sudo apt-get install bubblewrap socat slirp4netns; allow user namespaces for a non-root runtime',
    };
  const base = `${version.output}: ${isolation.reason}; network ${isolation.network}`;
  return isolation.off.length === 0
    ? { name: 'bwrap', status: 'ok', detail: base }
    : {
        name: 'bwrap',
        status: 'warn',
        detail: `${base}; off: ${isolation.off.join('; ')}`,
        fix: 'Run the runtime as root with slirp4netns installed for outbound network, or list the host ports sessions need in AGENTRT_SANDBOX_HOST_PORTS.',
      };
}

async function checkDocker(timeoutMs: number): Promise<Check> {
  const client = await run('docker', ['version', '--format', '{{.Client.Version}}'], timeoutMs);
  if (client.code === -1 && !client.output) {
    return {
      name: 'docker',
      status: 'warn',
      detail:
        'Docker is not installed: only needed for docker compose and container-image runtimes (file:// runtimes work without it)',
      fix: 'Install Docker Engine or Docker Desktop if you want docker compose.',
    };
  }
  const server = await run('docker', ['version', '--format', '{{.Server.Version}}'], timeoutMs);
  return server.code === 0 && server.output
    ? { name: 'docker', status: 'ok', detail: `engine ${server.output}` }
    : {
        name: 'docker',
        status: 'warn',
        detail:
          'the docker CLI is installed but no engine answers: docker compose and image runtimes will not work',
        fix: 'Start Docker (systemctl start docker, or open Docker Desktop), or check DOCKER_HOST.',
      };
}

function envPort(env: CliIO['env'], name: string, fallback: number): number {
  const value = Number(env[name]);
  return Number.isInteger(value) && value > 0 && value < 65536 ? value : fallback;
}

/** Every doctor check, in display order. */
export async function runChecks(options: {
  env: CliIO['env'];
  collectorUrl?: string;
  timeoutMs: number;
}): Promise<Check[]> {
  const { env, timeoutMs } = options;
  const node = checkNode();
  const [local, collector, docker] = await Promise.all([
    node.status === 'ok' ? stackChecks(await loadStackModules(), env, timeoutMs) : notOnThisNode(),
    checkCollector(options.collectorUrl, env, timeoutMs),
    checkDocker(timeoutMs),
  ]);
  return [
    node,
    local.build,
    ...local.ports,
    collector,
    checkTelemetrySwitches(env),
    checkModel(env),
    local.bwrap,
    docker,
  ];
}

async function stackChecks(
  { stack, runtime }: StackModules,
  env: CliIO['env'],
  timeoutMs: number,
): Promise<{ build: Check; ports: Check[]; bwrap: Check }> {
  const collectorPort = envPort(env, 'AGENTRT_COLLECTOR_PORT', 4318);
  const runtimePort = envPort(env, 'AGENTRT_RUNTIME_PORT', 8787);
  const weatherPort = envPort(env, 'AGENTRT_WEATHER_PORT', 8000);
  const port = (service: keyof typeof PORT_SETTINGS, number: number, ours: string) =>
    checkPort(service, stack.PORT_SETTINGS[service], number, () => answersOk(ours));
  const [ports, bwrap] = await Promise.all([
    Promise.all([
      port('collector', collectorPort, `http://127.0.0.1:${collectorPort}/healthz`),
      port('runtime', runtimePort, `http://127.0.0.1:${runtimePort}/ping`),
      port('weather', weatherPort, `http://127.0.0.1:${weatherPort}/health`),
    ]),
    checkBwrap(runtime, timeoutMs),
  ]);
  return { build: checkBuild(stack.BUILT_ENTRIES), ports, bwrap };
}

/** On a Node below the floor the checks that load the runtime are named, not run. */
function notOnThisNode(): { build: Check; ports: Check[]; bwrap: Check } {
  const skipped = (name: string): Check => ({
    name,
    status: 'warn',
    detail: `not checked: needs Node ${NODE_FLOOR}+ to load the runtime (see node)`,
  });
  return { build: skipped('build'), ports: [skipped('ports')], bwrap: skipped('bwrap') };
}

const MARKS: Record<CheckStatus, string> = { ok: '✔', warn: '⚠', fail: '✖' };

export function formatChecks(checks: readonly Check[]): string {
  const width = Math.max(...checks.map((c) => c.name.length));
  const lines = checks.flatMap((c) => [
    `${MARKS[c.status]} ${c.name.padEnd(width)}  ${c.detail}`,
    ...(c.fix ? [`  ${' '.repeat(width)}  fix: ${c.fix}`] : []),
  ]);
  const count = (s: CheckStatus) => checks.filter((c) => c.status === s).length;
  lines.push('', `${count('ok')} ok, ${count('warn')} warnings, ${count('fail')} problems`);
  return `${lines.join('\n')}\n`;
}

export const doctorCommand: Command = {
  name: 'doctor',
  summary: 'check Node, ports, collector, credentials, bwrap and Docker; say how to fix what is missing',
  usage,
  async run(argv, io) {
    const { values } = parseCommandArgs({
      args: argv,
      options: {
        json: { type: 'boolean', default: false },
        'collector-url': { type: 'string' },
        'timeout-ms': { type: 'string' },
      },
    });
    const timeoutMs = values['timeout-ms'] === undefined ? 5_000 : Number(values['timeout-ms']);
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1)
      throw new UsageError(`--timeout-ms must be a positive integer`);
    const checks = await runChecks({ env: io.env, collectorUrl: values['collector-url'], timeoutMs });
    const ok = !checks.some((c) => c.status === 'fail');
    io.stdout(values.json ? `${JSON.stringify({ ok, checks }, null, 2)}\n` : formatChecks(checks));
    return ok ? 0 : 1;
  },
};

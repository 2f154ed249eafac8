import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  RuntimeClientRequestError,
  type RuntimeDetail,
  type RuntimeSpec,
  createRuntimeClient,
  createRuntimeServer,
} from '@agentrt/runtime';
import { type CliIO, type Command, UsageError, parseCommandArgs } from '../command.js';
import { REFERENCE_AGENTS } from '../dev/reference-agents.js';
import { runtimeEndpoints, runtimeVersions } from './runtime-endpoints.js';
import { jwtAuthorizerFrom } from './runtime-flags.js';

export const DEFAULT_RUNTIME_URL = 'http://127.0.0.1:8787';

const usage = `Usage: agentrt runtime <subcommand> [options]

Runs and manages the local hosting runtime (AgentCore-compatible control + data plane).

  start   [--port <n>] [--host <h>] [--data-dir <dir>] [--warm-pool <n>] [--isolation auto|bwrap|none|unsafe-process]
          Runs the runtime in the foreground until Ctrl-C (logs are JSON lines on stdout).
  create  <name> (<uri> | <dir> | --dir <path> | --uri <uri>) [--env K=V ...] [--idle-timeout <s>]
          [--max-lifetime <s>] [--protocol HTTP|MCP|A2A|AGUI] [--jwt-discovery-url <url>
          --jwt-audience <aud,...> --jwt-client <id,...>] [--description <text>] [--role-arn <arn>] [--no-wait]
          Creates a runtime from a directory (file://, e.g. file://$PWD/examples/sdk-agent, or just the
          path) or an image URI and waits until it is READY. The name must be new (\`agentrt dev\`
          registers ${REFERENCE_AGENTS.map((a) => a.name).join(', ')}); \`update\` deploys a new version of an existing one.
  update  <runtime> (<uri> | <dir> | --dir <path> | --uri <uri>) [same options as create]
          New version; DEFAULT moves to it.
  list                          One line per runtime.
  versions  <runtime>           Its versions (newest first).
  endpoints <runtime> [--pin <name> --version <n>] [--delete <name>]
          Its endpoints (qualifiers): DEFAULT follows the latest version; --pin creates or moves a
          named endpoint to a version (invoke it with \`agentrt invoke --qualifier <name>\`).
  get     <runtime>             Details of one runtime (name, id or ARN).
  delete  <runtime>             Deletes the runtime and stops its sessions.

Common options:
  --url <url>      the runtime (default $AGENTRT_RUNTIME_URL or ${DEFAULT_RUNTIME_URL})
  --api-key <key>  sent as x-api-key (default $AGENTRT_API_KEY)
  --json           print the raw API answer as JSON

Flags of create/update:
  --env K=V              an environment variable of the agent (repeat for more)
  --idle-timeout <s>     stop a session idle this long (60-28800, default 900)
  --max-lifetime <s>     stop a session this old (60-28800, default 28800)
  --protocol <p>         HTTP (default), MCP, A2A or AGUI: what the container serves
  --jwt-discovery-url <url>  inbound JWT auth: the issuer's .../.well-known/openid-configuration;
  --jwt-audience <aud>       with allowed audiences and/or
  --jwt-client <id>          allowed client ids (comma-separated or repeated). Callers then send
                             \`agentrt invoke --bearer <token>\``;

const options = {
  url: { type: 'string' },
  'api-key': { type: 'string' },
  json: { type: 'boolean', default: false },
  port: { type: 'string' },
  host: { type: 'string' },
  'data-dir': { type: 'string' },
  'warm-pool': { type: 'string' },
  isolation: { type: 'string' },
  dir: { type: 'string' },
  uri: { type: 'string' },
  env: { type: 'string', multiple: true },
  'idle-timeout': { type: 'string' },
  'max-lifetime': { type: 'string' },
  description: { type: 'string' },
  'role-arn': { type: 'string' },
  'no-wait': { type: 'boolean', default: false },
  protocol: { type: 'string' },
  'jwt-discovery-url': { type: 'string' },
  'jwt-audience': { type: 'string', multiple: true },
  'jwt-client': { type: 'string', multiple: true },
  pin: { type: 'string' },
  version: { type: 'string' },
  delete: { type: 'string' },
} as const;

type Values = ReturnType<
  typeof parseCommandArgs<{ options: typeof options; allowPositionals: true }>
>['values'];

function integer(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0)
    throw new UsageError(`--${flag} must be a whole number, got '${raw}'`);
  return value;
}

/** `--url` and `--api-key` with their env fallbacks, shared by `runtime` and `invoke`. */
export function clientFrom(values: { url?: string; 'api-key'?: string }, io: CliIO) {
  const url = values.url ?? io.env.AGENTRT_RUNTIME_URL?.trim() ?? DEFAULT_RUNTIME_URL;
  const apiKey = values['api-key'] ?? io.env.AGENTRT_API_KEY?.trim();
  return createRuntimeClient({ url: url || DEFAULT_RUNTIME_URL, ...(apiKey ? { apiKey } : {}) });
}

/** The artifact: a positional `<uri>` (anything with a scheme) or `<dir>`, or --uri / --dir. */
function specFrom(values: Values, io: CliIO, source: string | undefined): RuntimeSpec {
  const given = [source, values.dir, values.uri].filter((v) => v !== undefined);
  if (given.length !== 1)
    throw new UsageError(
      given.length
        ? `give the artifact once: a <uri> or <dir> argument, --dir <path> or --uri <uri> (got ${given.length})`
        : 'missing the artifact: a <uri> (file://... or an image) or <dir> argument, --dir <path> or --uri <uri>',
    );
  const dir =
    values.dir ?? (source !== undefined && !/^[a-z][\w+.-]*:\/\//i.test(source) ? source : undefined);
  const containerUri = dir
    ? pathToFileURL(isAbsolute(dir) ? dir : resolve(io.cwd, dir)).href
    : ((values.uri ?? source) as string);
  const spec: RuntimeSpec = { containerUri };
  if (values.env?.length) {
    spec.environmentVariables = {};
    for (const pair of values.env) {
      const eq = pair.indexOf('=');
      if (eq <= 0) throw new UsageError(`--env expects KEY=VALUE, got '${pair}'`);
      spec.environmentVariables[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  const idle = integer('idle-timeout', values['idle-timeout']);
  const max = integer('max-lifetime', values['max-lifetime']);
  if (idle !== undefined || max !== undefined)
    spec.lifecycleConfiguration = {
      ...(idle !== undefined ? { idleRuntimeSessionTimeout: idle } : {}),
      ...(max !== undefined ? { maxLifetime: max } : {}),
    };
  Object.assign(spec, jwtAuthorizerFrom(values));
  if (values.description) spec.description = values.description;
  if (values['role-arn']) spec.roleArn = values['role-arn'];
  if (values.protocol !== undefined) {
    const protocol = values.protocol.toUpperCase();
    if (protocol !== 'HTTP' && protocol !== 'MCP' && protocol !== 'A2A' && protocol !== 'AGUI')
      throw new UsageError(`--protocol must be HTTP, MCP, A2A or AGUI, got '${values.protocol}'`);
    spec.serverProtocol = protocol;
  }
  return spec;
}

function describe(r: RuntimeDetail): string {
  const lines = [
    `${r.agentRuntimeName}  ${r.status}  version ${r.agentRuntimeVersion}`,
    `  id        ${r.agentRuntimeId}`,
    `  arn       ${r.agentRuntimeArn}`,
    `  artifact  ${r.agentRuntimeArtifact?.containerConfiguration?.containerUri ?? '-'}`,
    `  lifecycle idle ${r.lifecycleConfiguration.idleRuntimeSessionTimeout}s, max ${r.lifecycleConfiguration.maxLifetime}s`,
    `  updated   ${r.lastUpdatedAt}`,
  ];
  if (r.failureReason) lines.push(`  reason    ${r.failureReason}`);
  return `${lines.join('\n')}\n`;
}

async function start(values: Values, io: CliIO): Promise<number> {
  const isolation = values.isolation;
  if (
    isolation !== undefined &&
    isolation !== 'auto' &&
    isolation !== 'bwrap' &&
    isolation !== 'none' &&
    isolation !== 'unsafe-process'
  )
    throw new UsageError(`--isolation must be auto, bwrap, none or unsafe-process, got '${isolation}'`);
  const port = integer('port', values.port);
  const warmPoolSize = integer('warm-pool', values['warm-pool']);
  const server = await createRuntimeServer({
    ...(port !== undefined ? { port } : {}),
    ...(values.host ? { host: values.host } : {}),
    ...(values['data-dir'] ? { dataDir: resolve(io.cwd, values['data-dir']) } : {}),
    ...(warmPoolSize !== undefined ? { warmPoolSize } : {}),
    ...(isolation ? { isolation } : {}),
    logSink: io.stdout,
  });
  io.stderr(
    `agentrt runtime listening on ${server.url} (isolation: ${server.isolation}); Ctrl-C stops it and every session\n`,
  );
  await new Promise<void>((resolveStop) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolveStop();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await server.close();
  return 0;
}

export const runtimeCommand: Command = {
  name: 'runtime',
  summary:
    'run the local hosting runtime; create, list, get, update or delete agent runtimes, their versions and endpoints',
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs({
      args: argv,
      options,
      allowPositionals: true,
      strict: true,
    });
    const [sub, ref, ...rest] = positionals;
    // create/update take the artifact as an optional second argument.
    const takesSource = sub === 'create' || sub === 'update';
    const source = takesSource ? rest[0] : undefined;
    const extra = takesSource ? rest.slice(1) : rest;
    if (extra.length) throw new UsageError(`unexpected argument '${extra[0]}'`);
    const out = (value: unknown, text: string) =>
      io.stdout(values.json ? `${JSON.stringify(value, null, 2)}\n` : text);
    const client = () => clientFrom(values, io);
    const need = (what: string) => {
      if (!ref) throw new UsageError(`${sub} needs ${what}`);
      return ref;
    };
    switch (sub) {
      case 'start':
        return start(values, io);
      case 'create': {
        const c = client();
        const name = need('a name');
        const created = await c.create(name, specFrom(values, io, source)).catch((error: unknown) => {
          throw error instanceof RuntimeClientRequestError && error.type === 'ConflictException'
            ? new Error(
                `${error.message}. Pick another name, or deploy a new version of it with ` +
                  `\`agentrt runtime update ${name} <uri>\` (\`agentrt dev\` registers ${REFERENCE_AGENTS.map((a) => a.name).join(', ')}).`,
                { cause: error },
              )
            : error;
        });
        if (values['no-wait']) {
          out(created, `${created.agentRuntimeId}  ${created.status}\n  arn ${created.agentRuntimeArn}\n`);
          return 0;
        }
        const settled = await c.waitSettled(created.agentRuntimeId);
        out(settled, describe(settled));
        return settled.status === 'READY' ? 0 : 1;
      }
      case 'update': {
        const c = client();
        const target = await c.resolve(need('a runtime'));
        const updated = await c.update(target.agentRuntimeId, specFrom(values, io, source));
        const settled = values['no-wait'] ? undefined : await c.waitSettled(target.agentRuntimeId);
        out(
          settled ?? updated,
          settled ? describe(settled) : `version ${updated.agentRuntimeVersion} ${updated.status}\n`,
        );
        return !settled || settled.status === 'READY' ? 0 : 1;
      }
      case 'list': {
        const all = await client().list();
        const width = Math.max(4, ...all.map((r) => r.agentRuntimeName.length));
        const rows = all.map(
          (r) =>
            `${r.agentRuntimeName.padEnd(width)}  ${r.status.padEnd(13)}  v${r.agentRuntimeVersion.padEnd(4)}  ${r.agentRuntimeId}`,
        );
        out(
          { agentRuntimes: all },
          all.length
            ? `${['NAME'.padEnd(width) + '  STATUS         VER    ID', ...rows].join('\n')}\n`
            : 'no runtimes\n',
        );
        return 0;
      }
      case 'get': {
        const c = client();
        const detail = await c.get((await c.resolve(need('a runtime'))).agentRuntimeId);
        out(detail, describe(detail));
        return 0;
      }
      case 'versions':
        return runtimeVersions(client(), need('a runtime'), values.json, io);
      case 'endpoints':
        return runtimeEndpoints(client(), need('a runtime'), values, io);
      case 'delete': {
        const c = client();
        const target = await c.resolve(need('a runtime'));
        const deleted = await c.delete(target.agentRuntimeId);
        out(deleted, `${target.agentRuntimeName} ${deleted.status}\n`);
        return 0;
      }
      default:
        throw new UsageError(sub ? `unknown subcommand '${sub}'` : 'missing subcommand');
    }
  },
};

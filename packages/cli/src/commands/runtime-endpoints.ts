// `agentrt runtime versions <runtime>` and `agentrt runtime endpoints <runtime> [--pin|--delete]`.
import { type RuntimeClient } from '@agentrt/runtime';
import { type CliIO, UsageError } from '../command.js';
import { renderTable } from '../collector-client.js';

const print = (io: CliIO, json: boolean, value: unknown, text: string) =>
  io.stdout(json ? `${JSON.stringify(value, null, 2)}\n` : text);

export async function runtimeVersions(
  client: RuntimeClient,
  ref: string,
  json: boolean | undefined,
  io: CliIO,
): Promise<number> {
  const runtime = await client.resolve(ref);
  const versions = (await client.versions(runtime.agentRuntimeId)).sort(
    (a, b) => Number(b.agentRuntimeVersion) - Number(a.agentRuntimeVersion),
  );
  print(
    io,
    Boolean(json),
    { agentRuntimes: versions },
    renderTable(
      ['version', 'status', 'created', 'description'],
      versions.map((v) => [v.agentRuntimeVersion, v.status, v.lastUpdatedAt, v.description ?? '']),
    ),
  );
  return 0;
}

export async function runtimeEndpoints(
  client: RuntimeClient,
  ref: string,
  values: { pin?: string; version?: string; delete?: string; json?: boolean },
  io: CliIO,
): Promise<number> {
  if (values.pin !== undefined && values.delete !== undefined)
    throw new UsageError('give --pin <name> or --delete <name>, not both');
  if (values.version !== undefined && values.pin === undefined)
    throw new UsageError('--version needs --pin <endpoint name>');
  if (values.pin !== undefined) {
    if (values.version === undefined || !/^[1-9]\d{0,4}$/.test(values.version))
      throw new UsageError(
        `--pin needs --version <n>, a version number of the runtime (got ${values.version === undefined ? 'none' : `'${values.version}'`})`,
      );
    if (!/^[a-zA-Z][a-zA-Z0-9_]{0,47}$/.test(values.pin))
      throw new UsageError(
        `--pin must be an endpoint name (a letter, then letters, digits or _; at most 48), got '${values.pin}'`,
      );
  }
  const runtime = await client.resolve(ref);
  const id = runtime.agentRuntimeId;
  if (values.pin !== undefined) {
    const endpoint = await client.pinEndpoint(id, values.pin, values.version!);
    print(
      io,
      Boolean(values.json),
      endpoint,
      `${runtime.agentRuntimeName} endpoint ${endpoint.name} → version ${endpoint.liveVersion}\n`,
    );
    return 0;
  }
  if (values.delete !== undefined) {
    const deleted = await client.deleteEndpoint(id, values.delete);
    print(
      io,
      Boolean(values.json),
      deleted,
      `${runtime.agentRuntimeName} endpoint ${values.delete} ${deleted.status}\n`,
    );
    return 0;
  }
  const endpoints = await client.endpoints(id);
  print(
    io,
    Boolean(values.json),
    { runtimeEndpoints: endpoints },
    renderTable(
      ['endpoint', 'live version', 'target version', 'status', 'updated'],
      endpoints.map((e) => [e.name, e.liveVersion ?? '', e.targetVersion ?? '', e.status, e.lastUpdatedAt]),
    ),
  );
  return 0;
}

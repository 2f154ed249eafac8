// `agentrt sessions --active` and `agentrt sessions stop <id>`: sessions as the local runtime sees
// them (live workers), next to the collector's view of sessions (their telemetry) in sessions.ts.
import { type ActiveSession } from '@agentrt/runtime';
import { bearerFrom } from '../bearer.js';
import { type CliIO, UsageError } from '../command.js';
import { formatTime, renderTable } from '../collector-client.js';
import { clientFrom } from './runtime.js';

export interface RuntimeSessionFlags {
  'runtime-url'?: string;
  'api-key'?: string;
  runtime?: string;
  json?: boolean;
  bearer?: string;
  'bearer-env'?: string;
}

const client = (values: RuntimeSessionFlags, io: CliIO) =>
  clientFrom({ ...(values['runtime-url'] ? { url: values['runtime-url'] } : {}), ...values }, io);

function ago(iso: string): string {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 120 ? `${s}s ago` : s < 7200 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}

export async function listActiveSessions(values: RuntimeSessionFlags, io: CliIO): Promise<number> {
  let sessions: ActiveSession[] = await client(values, io).activeSessions();
  if (values.runtime)
    sessions = sessions.filter((s) => [s.runtimeName, s.runtimeId, s.runtimeArn].includes(values.runtime!));
  if (values.json) {
    io.stdout(`${JSON.stringify({ sessions }, null, 2)}\n`);
    return 0;
  }
  if (!sessions.length) {
    io.stdout('no active sessions\n');
    return 0;
  }
  io.stdout(
    renderTable(
      ['session', 'runtime', 'state', 'started', 'last activity', 'cpu', 'memory', 'pid'],
      sessions.map((s) => [
        s.sessionId,
        `${s.runtimeName} v${s.version}`,
        s.state + (s.inflight ? ` (${s.inflight} in flight)` : ''),
        formatTime(Date.parse(s.startedAt)),
        ago(s.lastActivityAt),
        s.cpuSeconds === null ? '-' : `${s.cpuSeconds.toFixed(2)}s`,
        s.rssBytes === null ? '-' : `${(s.rssBytes / 1048576).toFixed(1)} MiB`,
        s.pid ?? '-',
      ]),
      64,
    ),
  );
  return 0;
}

export async function stopSession(
  sessionId: string | undefined,
  values: RuntimeSessionFlags,
  io: CliIO,
): Promise<number> {
  if (!sessionId) throw new UsageError('stop needs a <sessionId>');
  const c = client(values, io);
  let arn: string;
  let name: string;
  if (values.runtime) {
    const runtime = await c.resolve(values.runtime);
    arn = runtime.agentRuntimeArn;
    name = runtime.agentRuntimeName;
  } else {
    const live = (await c.activeSessions()).filter((s) => s.sessionId === sessionId);
    if (live.length === 0)
      throw new Error(
        `no active session ${sessionId} in the runtime (see \`agentrt sessions --active\`); pass --runtime <name> to stop it on a runtime regardless`,
      );
    if (live.length > 1)
      throw new UsageError(
        `session ${sessionId} is active on ${live.map((s) => s.runtimeName).join(' and ')}: pass --runtime <name>`,
      );
    arn = live[0]!.runtimeArn;
    name = live[0]!.runtimeName;
  }
  const bearerToken = bearerFrom(values, io.env);
  await c.stopSession(arn, sessionId, bearerToken ? { bearerToken } : {});
  if (values.json) io.stdout(`${JSON.stringify({ sessionId, runtimeArn: arn, stopped: true }, null, 2)}\n`);
  else io.stdout(`stopped session ${sessionId} of ${name}\n`);
  return 0;
}

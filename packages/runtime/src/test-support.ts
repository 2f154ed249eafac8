// Shared set-up for the runtime's tests: a server on port 0 with its own data dir, and the
// official AWS SDK clients pointed at it. Not part of the package's API.
import { mkdtempSync, rmSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  BedrockAgentCoreClient,
  InvokeAgentRuntimeCommand,
  InvokeAgentRuntimeCommandCommand,
  StopRuntimeSessionCommand,
} from '@aws-sdk/client-bedrock-agentcore';
import {
  BedrockAgentCoreControlClient,
  CreateAgentRuntimeCommand,
  type CreateAgentRuntimeCommandInput,
  GetAgentRuntimeCommand,
  UpdateAgentRuntimeCommand,
  type UpdateAgentRuntimeCommandInput,
  type GetAgentRuntimeCommandOutput,
} from '@aws-sdk/client-bedrock-agentcore-control';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { type RuntimeServerOptions } from './config.js';
import { type RuntimeServer, createRuntimeServer } from './server.js';

export const ROLE_ARN = 'arn:aws:iam::123456789012:role/AgentRuntimeRole';
const fixturesDir = resolve(fileURLToPath(import.meta.url), '..', '..', 'test-fixtures');

export function fixtureUri(name: string): string {
  return pathToFileURL(join(fixturesDir, name)).href;
}

/** A session id of the 33+ chars the data plane requires. */
export function sessionId(label: string): string {
  return `${label}-${'0'.repeat(40)}`.slice(0, Math.max(40, label.length + 1));
}

export interface TestRuntime {
  server: RuntimeServer;
  control: BedrockAgentCoreControlClient;
  data: BedrockAgentCoreClient;
  dataDir: string;
  logs: Record<string, unknown>[];
  close(): Promise<void>;
}

export function sdkClients(url: string, region = 'us-east-1', accessKeyId = 'AKIDLOCAL', maxAttempts = 3) {
  const common = {
    endpoint: url,
    region,
    maxAttempts,
    credentials: { accessKeyId, secretAccessKey: 'local-secret' },
  };
  return { control: new BedrockAgentCoreControlClient(common), data: new BedrockAgentCoreClient(common) };
}

export async function startRuntime(
  options: RuntimeServerOptions = {},
  dataDir?: string,
): Promise<TestRuntime> {
  const dir = dataDir ?? mkdtempSync(join(os.tmpdir(), 'agentrt-runtime-test-'));
  const logs: Record<string, unknown>[] = [];
  const server = await createRuntimeServer({
    host: '127.0.0.1',
    port: 0,
    dataDir: dir,
    pingIntervalMs: 100,
    stopGraceMs: 1000,
    startTimeoutMs: 20_000,
    lifecycleMinSeconds: 1,
    logSink: (line) => void logs.push(JSON.parse(line) as Record<string, unknown>),
    ...options,
  });
  const { control, data } = sdkClients(server.url);
  return {
    server,
    control,
    data,
    dataDir: dir,
    logs,
    async close() {
      control.destroy();
      data.destroy();
      await server.close();
      if (!dataDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A session's worker id and state now (to tell that a fresh worker took it over). */
export function sessionWorker(rt: TestRuntime, sid: string): { workerId?: string; state?: string } {
  const session = rt.server.sessions().find((s) => s.sessionId === sid);
  return { workerId: session?.worker?.id, state: session?.state };
}

/** Creates a runtime and polls GetAgentRuntime until it leaves CREATING/UPDATING (there are no waiters). */
export async function createReady(
  control: BedrockAgentCoreControlClient,
  name: string,
  fixture: string,
  extra: Partial<CreateAgentRuntimeCommandInput> = {},
): Promise<GetAgentRuntimeCommandOutput> {
  const created = await control.send(
    new CreateAgentRuntimeCommand({
      agentRuntimeName: name,
      agentRuntimeArtifact: { containerConfiguration: { containerUri: fixtureUri(fixture) } },
      roleArn: ROLE_ARN,
      networkConfiguration: { networkMode: 'PUBLIC' },
      ...extra,
    }),
  );
  return pollStatus(control, created.agentRuntimeId!);
}

/** Updates the runtime to a new version of `fixture` (with `extra`); resolves once it settled. */
export async function updateReady(
  control: BedrockAgentCoreControlClient,
  agentRuntimeId: string,
  fixture: string,
  extra: Partial<UpdateAgentRuntimeCommandInput> = {},
): Promise<GetAgentRuntimeCommandOutput> {
  await control.send(
    new UpdateAgentRuntimeCommand({
      agentRuntimeId,
      agentRuntimeArtifact: { containerConfiguration: { containerUri: fixtureUri(fixture) } },
      roleArn: ROLE_ARN,
      networkConfiguration: { networkMode: 'PUBLIC' },
      ...extra,
    }),
  );
  return pollStatus(control, agentRuntimeId);
}

export async function pollStatus(
  control: BedrockAgentCoreControlClient,
  agentRuntimeId: string,
): Promise<GetAgentRuntimeCommandOutput> {
  for (let i = 0; i < 200; i++) {
    const got = await control.send(new GetAgentRuntimeCommand({ agentRuntimeId }));
    if (got.status !== 'CREATING' && got.status !== 'UPDATING') return got;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`runtime ${agentRuntimeId} never settled`);
}

/** What InvokeAgentRuntimeCommand streamed back, read to its end. */
export interface CommandRun {
  started: boolean;
  stdout: string;
  stderr: string;
  /** When each delta arrived (ms since the call). */
  at: number[];
  stop?: { exitCode: number; status: string };
}

/** Runs a command in a session through the SDK's InvokeAgentRuntimeCommand and reads every event. */
export async function runCommand(
  data: BedrockAgentCoreClient,
  agentRuntimeArn: string,
  runtimeSessionId: string,
  command: string,
  timeout?: number,
): Promise<CommandRun> {
  const t0 = Date.now();
  const out = await data.send(
    new InvokeAgentRuntimeCommandCommand({
      agentRuntimeArn,
      runtimeSessionId,
      body: { command, ...(timeout !== undefined ? { timeout } : {}) },
    }),
  );
  if (out.contentType !== 'application/vnd.amazon.eventstream' || out.runtimeSessionId !== runtimeSessionId)
    throw new Error(`unexpected answer: ${out.contentType} for ${out.runtimeSessionId}`);
  const result: CommandRun = { started: false, stdout: '', stderr: '', at: [] };
  for await (const event of out.stream!) {
    const chunk = event.chunk;
    if (!chunk) throw new Error(`unexpected event ${JSON.stringify(event)}`);
    if (chunk.contentStart) result.started = true;
    if (chunk.contentDelta) {
      result.at.push(Date.now() - t0);
      result.stdout += chunk.contentDelta.stdout ?? '';
      result.stderr += chunk.contentDelta.stderr ?? '';
    }
    if (chunk.contentStop)
      result.stop = { exitCode: chunk.contentStop.exitCode!, status: chunk.contentStop.status! };
  }
  return result;
}

/** Invokes with a JSON payload and parses the JSON answer. */
/** StopRuntimeSession of the session `label` (see {@link sessionId}). */
export async function stopSession(data: BedrockAgentCoreClient, agentRuntimeArn: string, label: string) {
  await data.send(new StopRuntimeSessionCommand({ agentRuntimeArn, runtimeSessionId: sessionId(label) }));
}

export async function invokeJson(
  data: BedrockAgentCoreClient,
  agentRuntimeArn: string,
  runtimeSessionId: string,
  payload: unknown,
  extra: { qualifier?: string } = {},
): Promise<Record<string, unknown>> {
  const out = await data.send(
    new InvokeAgentRuntimeCommand({
      agentRuntimeArn,
      runtimeSessionId,
      contentType: 'application/json',
      accept: 'application/json',
      payload: new TextEncoder().encode(JSON.stringify(payload)),
      ...extra,
    }),
  );
  return JSON.parse(await out.response!.transformToString()) as Record<string, unknown>;
}

export { alive } from './sessions/leftovers.js';

export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A local OpenID provider: discovery document + JWKS, and a signer for its tokens. */
export async function startIdp() {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  let base = '';
  const server: Server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/.well-known/openid-configuration')
      return res.end(JSON.stringify({ issuer: base, jwks_uri: `${base}/jwks.json` }));
    if (req.url === '/jwks.json') return res.end(JSON.stringify({ keys: [jwk] }));
    res.writeHead(404).end('{}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sign = (claims: Record<string, unknown>, key = privateKey, issuer = base, expires = true) => {
    const jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer(issuer)
      .setIssuedAt();
    return (expires ? jwt.setExpirationTime('5m') : jwt).sign(key);
  };
  return { base, sign, close: () => new Promise<void>((r) => server.close(() => r())) };
}

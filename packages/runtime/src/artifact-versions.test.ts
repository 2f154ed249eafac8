// file:// artifacts are immutable per version, with the official AWS SDK clients only: a version
// runs the snapshot its create/update took, whatever the folder holds later; `live` runs in place.
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DeleteAgentRuntimeCommand,
  UpdateAgentRuntimeCommand,
} from '@aws-sdk/client-bedrock-agentcore-control';
import {
  ROLE_ARN,
  type TestRuntime,
  createReady,
  invokeJson,
  pollStatus,
  sessionId,
  startRuntime,
  waitFor,
} from './test-support.js';

/** An agent that answers with what its build.txt holds when asked, in a 0700 folder (mkdtemp's mode). */
function agentFolder(build: string, mode = 0o700): string {
  const dir = mkdtempSync(join(os.tmpdir(), 'agentrt-snapshot-agent-'));
  writeFileSync(join(dir, 'agentrt.json'), '{ "command": ["node", "server.mjs"] }');
  writeFileSync(
    join(dir, 'server.mjs'),
    `import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(req.url === '/ping' ? '{"status":"Healthy"}' : JSON.stringify({ build: readFileSync('build.txt', 'utf8') }));
  });
}).listen(Number(process.env.PORT ?? 8080), process.env.HOST ?? '0.0.0.0');
`,
  );
  writeFileSync(join(dir, 'build.txt'), build);
  chmodSync(dir, mode);
  return dir;
}

const update = (rt: TestRuntime, agentRuntimeId: string, dir: string) =>
  rt.control.send(
    new UpdateAgentRuntimeCommand({
      agentRuntimeId,
      agentRuntimeArtifact: { containerConfiguration: { containerUri: pathToFileURL(dir).href } },
      roleArn: ROLE_ARN,
      networkConfiguration: { networkMode: 'PUBLIC' },
    }),
  );

describe('file:// artifacts snapshotted per version', () => {
  let rt: TestRuntime;
  const dirs: string[] = [];
  beforeAll(async () => {
    rt = await startRuntime();
  });
  afterAll(async () => {
    await rt?.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const build = async (arn: string, label: string) =>
    ((await invokeJson(rt.data, arn, sessionId(label), {})) as { build: string }).build;

  it('runs what the folder held at create, edits reach only the next version, delete removes the copy', async () => {
    const dir = agentFolder('first');
    dirs.push(dir);
    const created = await createReady(rt.control, 'snapshot_versions', 'echo', {
      agentRuntimeArtifact: { containerConfiguration: { containerUri: pathToFileURL(dir).href } },
    });
    expect([created.status, created.failureReason]).toEqual(['READY', undefined]);
    const arn = created.agentRuntimeArn!;
    expect(await build(arn, 'snap-a')).toBe('first');
    writeFileSync(join(dir, 'build.txt'), 'second');
    expect(await build(arn, 'snap-a')).toBe('first');
    expect(await build(arn, 'snap-b')).toBe('first');
    await update(rt, created.agentRuntimeId!, dir);
    expect((await pollStatus(rt.control, created.agentRuntimeId!)).status).toBe('READY');
    expect(await build(arn, 'snap-c')).toBe('second');
    const artifacts = join(rt.dataDir, 'artifacts');
    expect(readdirSync(artifacts)).toHaveLength(2);
    await rt.control.send(new DeleteAgentRuntimeCommand({ agentRuntimeId: created.agentRuntimeId! }));
    await waitFor(() => readdirSync(artifacts).length === 0, 15_000, 'the snapshots removed');
  });

  it('fails CreateAgentRuntime for a folder over AGENTRT_ARTIFACT_MAX_MB, naming it', async () => {
    const small = await startRuntime({ artifactMaxMb: 1 });
    const dir = agentFolder('big');
    dirs.push(dir);
    writeFileSync(join(dir, 'weights.bin'), Buffer.alloc(2 * 2 ** 20));
    try {
      const got = await createReady(small.control, 'snapshot_big', 'echo', {
        agentRuntimeArtifact: { containerConfiguration: { containerUri: pathToFileURL(dir).href } },
      });
      expect(got.status).toBe('CREATE_FAILED');
      expect(got.failureReason).toMatch(/is larger than 1 MiB \(AGENTRT_ARTIFACT_MAX_MB\)/);
      expect(
        existsSync(join(small.dataDir, 'artifacts')) ? readdirSync(join(small.dataDir, 'artifacts')) : [],
      ).toEqual([]);
    } finally {
      await small.close();
    }
  });
});

describe('file:// artifacts run live (agentrt dev)', () => {
  it('serves an edit from the next request, with no new version', async () => {
    const rt = await startRuntime({ fileArtifacts: 'live' });
    const dir = agentFolder('first', 0o755); // in place, a root runtime's sandbox user must read it
    try {
      const arn = (
        await createReady(rt.control, 'live_artifact', 'echo', {
          agentRuntimeArtifact: { containerConfiguration: { containerUri: pathToFileURL(dir).href } },
        })
      ).agentRuntimeArn!;
      expect(await invokeJson(rt.data, arn, sessionId('live-a'), {})).toEqual({ build: 'first' });
      writeFileSync(join(dir, 'build.txt'), 'second');
      expect(await invokeJson(rt.data, arn, sessionId('live-a'), {})).toEqual({ build: 'second' });
      expect(existsSync(join(rt.dataDir, 'artifacts'))).toBe(false);
    } finally {
      await rt.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// How long a session's storage lives on this host's backends, as on the hosted service (and the
// kubernetes backend's PVCs): across stops, empty on a new version (the old version's folder goes
// once no session runs on it), and gone with the runtime. Through the AWS SDK; the folders read
// from the data dir.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { StopRuntimeSessionCommand } from '@aws-sdk/client-bedrock-agentcore';
import {
  CreateAgentRuntimeEndpointCommand,
  DeleteAgentRuntimeCommand,
} from '@aws-sdk/client-bedrock-agentcore-control';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type TestRuntime,
  createReady,
  invokeJson,
  updateReady,
  sessionId,
  startRuntime,
  stopSession,
  waitFor,
} from '../test-support.js';
import { storageHashOf } from './sandbox-session.js';

let rt: TestRuntime;
beforeAll(async () => {
  rt = await startRuntime();
});
afterAll(async () => {
  await rt?.close();
});

const storage = [{ sessionStorage: { mountPath: '/mnt/workspace' } }];

describe('session storage on this host', () => {
  it('is empty after a version update, the old version’s folder goes once unused, and all go with the runtime', async (ctx) => {
    // Sandboxed backends mount it (the plain process backend has no /mnt of its own).
    if (rt.server.isolation !== 'bwrap') ctx.skip();
    const runtime = await createReady(rt.control, 'storage_lifetime', 'hostile', {
      filesystemConfigurations: storage,
    });
    const arn = runtime.agentRuntimeArn!;
    const id = runtime.agentRuntimeId!;
    const sh = async (session: string, command: string) =>
      (await invokeJson(rt.data, arn, sessionId(session), { sh: command })) as { stdout: string };
    const folder = (session: string, version: number) =>
      join(rt.dataDir, 'session-storage', id, storageHashOf(sessionId(session)), `v${version}`);
    for (const session of ['stopped', 'running'])
      expect((await sh(session, 'echo v1 > /mnt/workspace/notes.txt && echo ok')).stdout.trim()).toBe('ok');
    const stop = new StopRuntimeSessionCommand({
      agentRuntimeArn: arn,
      runtimeSessionId: sessionId('stopped'),
    });
    await rt.data.send(stop);
    expect((await sh('stopped', 'cat /mnt/workspace/notes.txt')).stdout.trim()).toBe('v1');
    await rt.data.send(stop);

    const update = { filesystemConfigurations: storage, environmentVariables: { VERSION: '2' } };
    expect((await updateReady(rt.control, id, 'hostile', update)).agentRuntimeVersion).toBe('2');
    expect((await sh('stopped', 'ls -A /mnt/workspace; echo listed')).stdout.trim()).toBe('listed');
    await waitFor(() => !existsSync(folder('stopped', 1)), 10_000, 'version 1’s unused folder removed');
    expect(existsSync(folder('stopped', 2))).toBe(true);
    // A session still running on version 1 keeps its folder.
    expect(existsSync(folder('running', 1))).toBe(true);
    expect((await sh('running', 'cat /mnt/workspace/notes.txt')).stdout.trim()).toBe('v1');

    await rt.control.send(new DeleteAgentRuntimeCommand({ agentRuntimeId: id }));
    await waitFor(
      () => !existsSync(join(rt.dataDir, 'session-storage', id)),
      10_000,
      'the deleted runtime’s storage removed',
    );
  }, 60_000);

  it('is kept for a version an endpoint still serves, across stops', async (ctx) => {
    if (rt.server.isolation !== 'bwrap') ctx.skip();
    const runtime = await createReady(rt.control, 'storage_pinned', 'hostile', {
      filesystemConfigurations: storage,
    });
    const arn = runtime.agentRuntimeArn!;
    const id = runtime.agentRuntimeId!;
    await rt.control.send(new CreateAgentRuntimeEndpointCommand({ agentRuntimeId: id, name: 'pinned' }));
    const sh = async (session: string, command: string, qualifier?: string) =>
      (await invokeJson(
        rt.data,
        arn,
        sessionId(session),
        { sh: command },
        qualifier ? { qualifier } : {},
      )) as {
        stdout: string;
      };
    const folder = (session: string, version: number) =>
      join(rt.dataDir, 'session-storage', id, storageHashOf(sessionId(session)), `v${version}`);
    for (const session of ['on-pinned', 'on-default'])
      expect((await sh(session, 'echo v1 > /mnt/workspace/notes.txt && echo ok')).stdout.trim()).toBe('ok');
    for (const session of ['on-pinned', 'on-default'])
      await rt.data.send(
        new StopRuntimeSessionCommand({ agentRuntimeArn: arn, runtimeSessionId: sessionId(session) }),
      );

    const update = { filesystemConfigurations: storage, environmentVariables: { VERSION: '2' } };
    expect((await updateReady(rt.control, id, 'hostile', update)).agentRuntimeVersion).toBe('2');
    // Once a sweep has removed a version nobody keeps, version 1's folders are still there: the
    // pinned endpoint serves it.
    mkdirSync(folder('on-default', 99));
    await waitFor(() => !existsSync(folder('on-default', 99)), 10_000, 'a sweep pass');
    expect(existsSync(folder('on-pinned', 1))).toBe(true);
    expect(existsSync(folder('on-default', 1))).toBe(true);
    expect((await sh('on-pinned', 'cat /mnt/workspace/notes.txt', 'pinned')).stdout.trim()).toBe('v1');
  }, 60_000);

  it('goes once unused for AGENTRT_SESSION_STORAGE_IDLE_S, unless its session runs', async (ctx) => {
    if (rt.server.isolation !== 'bwrap') ctx.skip();
    const idle = await startRuntime({ sessionStorageIdleS: 4 });
    try {
      const runtime = await createReady(idle.control, 'storage_idle', 'hostile', {
        filesystemConfigurations: storage,
      });
      const arn = runtime.agentRuntimeArn!;
      const sh = async (session: string, command: string) =>
        (await invokeJson(idle.data, arn, sessionId(session), { sh: command })) as { stdout: string };
      const folder = (session: string) =>
        join(
          idle.dataDir,
          'session-storage',
          runtime.agentRuntimeId!,
          storageHashOf(sessionId(session)),
          'v1',
        );
      for (const session of ['unused', 'busy'])
        expect((await sh(session, 'echo kept > /mnt/workspace/notes.txt && echo ok')).stdout.trim()).toBe(
          'ok',
        );
      await stopSession(idle.data, arn, 'unused');
      await waitFor(() => !existsSync(folder('unused')), 20_000, 'the unused folder removed');
      // The running session's folder is older than the bound too, and stays.
      expect(existsSync(folder('busy'))).toBe(true);
      expect((await sh('busy', 'cat /mnt/workspace/notes.txt')).stdout.trim()).toBe('kept');
      expect((await sh('unused', 'ls -A /mnt/workspace; echo listed')).stdout.trim()).toBe('listed');
      // Stopped after running longer than the bound, its storage counts as used until it stopped:
      // it outlives a sweep that ran after the stop (one that removed an unkept version's folder).
      await stopSession(idle.data, arn, 'busy');
      mkdirSync(join(folder('busy'), '..', 'v99'));
      await waitFor(() => !existsSync(join(folder('busy'), '..', 'v99')), 10_000, 'a sweep after the stop');
      expect(existsSync(folder('busy'))).toBe(true);
    } finally {
      await idle.close();
    }
  }, 60_000);
});

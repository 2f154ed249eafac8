// A session whose worker died before the runtime heard of it: the call that finds it dead is taken
// by a fresh worker for the same session id, the caller sees no error. On the bwrap backend the
// sandbox's bridge still accepts connections for a moment after its worker ended (bwrap, which the
// runtime watches, ends a moment later): that moment is held open here by stopping bwrap.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectIsolation } from './sessions/isolation.js';
import { running } from './telemetry/process-usage.js';
import {
  type TestRuntime,
  createReady,
  invokeJson,
  sessionId,
  sessionWorker,
  startRuntime,
  waitFor,
} from './test-support.js';

/** Why a root bwrap runtime cannot run here, or undefined. */
const problem = ((): string | undefined => {
  if (process.getuid?.() !== 0) return 'needs a root runtime';
  try {
    const found = detectIsolation({ setting: 'auto', sandboxIds: { uid: 65534, gid: 65534 } });
    return found.mode === 'bwrap' ? undefined : 'the bwrap sandbox is not usable';
  } catch (error) {
    return (error as Error).message;
  }
})();
if (problem) console.warn(`dead worker on bwrap: skipped: ${problem}`);

describe.skipIf(problem !== undefined)('a bwrap session whose worker died unseen', () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime({ isolation: 'bwrap' });
  });
  afterAll(() => rt?.close(), 30_000);

  it('gets a fresh worker for the call its bridge accepted, with no error to the caller', async () => {
    const arn = (await createReady(rt.control, 'dead_bwrap_worker', 'echo')).agentRuntimeArn!;
    const sid = sessionId('dead-bwrap-worker');
    expect(await invokeJson(rt.data, arn, sid, { call: 1 })).toEqual({ call: 1 });
    const dead = rt.server.sessions().find((s) => s.sessionId === sid)!.worker!;
    const sandboxed = Number(
      spawnSync('pgrep', ['-P', String(dead.sandboxPid)], { encoding: 'utf8' }).stdout.trim(),
    );
    expect(sandboxed).toBeGreaterThan(0);
    process.kill(dead.pid, 'SIGSTOP'); // bwrap: its end, and the runtime's cleanup, wait
    process.kill(sandboxed, 'SIGKILL');
    await waitFor(() => !running(sandboxed), 5000, 'the killed worker gone');
    setTimeout(() => process.kill(dead.pid, 'SIGCONT'), 300);
    expect(dead.exited).toBeUndefined(); // the runtime has not seen the exit yet
    expect(await invokeJson(rt.data, arn, sid, { call: 2 })).toEqual({ call: 2 });
    expect(sessionWorker(rt, sid)).toMatchObject({ state: 'ready' });
    expect(sessionWorker(rt, sid).workerId).not.toBe(dead.id);
  }, 60_000);
});

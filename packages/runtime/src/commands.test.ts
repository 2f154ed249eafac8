import { ResourceNotFoundException, ValidationException } from '@aws-sdk/client-bedrock-agentcore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CommandRun,
  type TestRuntime,
  createReady,
  invokeJson,
  runCommand,
  sessionId,
  startRuntime,
} from './test-support.js';

describe('InvokeAgentRuntimeCommand through the AWS SDK', () => {
  let rt: TestRuntime;
  let arn: string;
  beforeAll(async () => {
    rt = await startRuntime();
    arn = (await createReady(rt.control, 'cmd_counter', 'counter')).agentRuntimeArn!;
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
  }, 30_000);

  const run = (runtimeSessionId: string, command: string, timeout?: number): Promise<CommandRun> =>
    runCommand(rt.data, arn, runtimeSessionId, command, timeout);

  it('runs in the session’s sandbox: same files and environment as its worker', async () => {
    const sid = sessionId('cmd-files');
    const invoked = await invokeJson(rt.data, arn, sid, { hello: 1 });
    const env = invoked.env as Record<string, string>;
    const echo = await run(sid, 'echo hi; echo oops >&2; cat "$TMPDIR/counter.txt"; echo "$HOME"');
    expect(echo.started).toBe(true);
    expect(echo.stdout).toBe(`hi\n1${env.HOME}\n`);
    expect(echo.stderr).toBe('oops\n');
    expect(echo.stop).toEqual({ exitCode: 0, status: 'COMPLETED' });
    expect((await run(sid, 'exit 3')).stop).toEqual({ exitCode: 3, status: 'COMPLETED' });
    // Another session's files are not there.
    const other = sessionId('cmd-other');
    await invokeJson(rt.data, arn, other, {});
    const peek = await run(other, `cat "${env.TMPDIR}/counter.txt" || echo missing`);
    if (rt.server.isolation === 'bwrap') expect(peek.stdout).toContain('missing');
  });

  it('streams output as it comes and times a never-ending command out', async () => {
    const sid = sessionId('cmd-stream');
    await invokeJson(rt.data, arn, sid, {});
    const streamed = await run(sid, 'for i in 1 2 3; do echo $i; sleep 0.3; done');
    expect(streamed.stdout).toBe('1\n2\n3\n');
    expect(streamed.at).toHaveLength(3);
    expect(streamed.at[2]! - streamed.at[0]!).toBeGreaterThanOrEqual(400);
    const t0 = Date.now();
    const forever = await run(sid, 'echo start; sleep 600', 1);
    expect(forever.stdout).toBe('start\n');
    expect(forever.stop).toEqual({ exitCode: 137, status: 'TIMED_OUT' });
    expect(Date.now() - t0).toBeLessThan(5000);
    // The session carries on.
    expect((await invokeJson(rt.data, arn, sid, {})).count).toBe(2);
  });

  it('kills what a timed-out command started, in its sandbox or pod (not only its stream)', async () => {
    const sid = sessionId('cmd-killed');
    await invokeJson(rt.data, arn, sid, {});
    const late = await run(
      sid,
      '(sleep 2; echo late > "$TMPDIR/late") & sleep 2; echo late > "$TMPDIR/late2"',
      1,
    );
    expect(late.stop).toEqual({ exitCode: 137, status: 'TIMED_OUT' });
    await new Promise((r) => setTimeout(r, 2500));
    const left = await run(sid, 'ls "$TMPDIR" | grep late || echo none');
    expect(left.stdout).toBe('none\n');
  });

  it('keeps no listener per command: 50 commands on one session leave the worker as they found it', async () => {
    const sid = sessionId('cmd-many');
    await invokeJson(rt.data, arn, sid, {});
    const worker = rt.server.sessions().find((s) => s.sessionId === sid)!.worker!;
    const before = worker.exitListenerCount;
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    try {
      for (let i = 0; i < 50; i++) expect((await run(sid, `echo ${i}`)).stdout).toBe(`${i}\n`);
      // Ten at once: each holds one listener while it runs, none is left after.
      const parallel = await Promise.all(Array.from({ length: 10 }, (_, i) => run(sid, `echo p${i}`)));
      expect(parallel.map((r) => r.stop?.status)).toEqual(Array(10).fill('COMPLETED'));
    } finally {
      process.off('warning', onWarning);
    }
    expect(worker.exitListenerCount).toBe(before);
    expect(warnings.filter((w) => /MaxListeners/.test(w))).toEqual([]);
  }, 120_000);

  it('refuses an unknown session and bad input with clear errors', async () => {
    await expect(run(sessionId('cmd-never-started'), 'true')).rejects.toThrow(ResourceNotFoundException);
    await expect(run(sessionId('cmd-never-started'), 'true')).rejects.toThrow(
      /invoke the runtime with this session id first/,
    );
    const sid = sessionId('cmd-bad');
    await invokeJson(rt.data, arn, sid, {});
    await expect(run(sid, '')).rejects.toThrow(/command: is required/);
    await expect(run(sid, 'true', 0)).rejects.toThrow(ValidationException);
    await expect(run(sid, 'true', 99_999)).rejects.toThrow(/timeout: must be an integer/);
    await expect(run('short', 'true')).rejects.toThrow(ValidationException);
  });
});

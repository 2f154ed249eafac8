import {
  InvokeAgentRuntimeCommand,
  ResourceNotFoundException,
  RetryableConflictException,
  RuntimeClientError,
  ServiceQuotaExceededException,
  StopRuntimeSessionCommand,
} from '@aws-sdk/client-bedrock-agentcore';
import { UpdateAgentRuntimeCommand } from '@aws-sdk/client-bedrock-agentcore-control';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntimeClient } from './client.js';
import { type Worker } from './sessions/worker.js';
import {
  ROLE_ARN,
  type TestRuntime,
  alive,
  createReady,
  fixtureUri,
  invokeJson,
  pollStatus,
  sdkClients,
  sessionId,
  startRuntime,
  waitFor,
} from './test-support.js';

/**
 * Whether a session's worker is gone: its process on the local backends; on the kubernetes one
 * (pid 0: no process of this host) its pod, which the pod watch saw deleted or ended.
 */
const gone = (worker: Worker) => (worker.pid > 0 ? !alive(worker.pid) : worker.exited !== undefined);

describe('sessions through the AWS SDK clients', () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime();
  });
  afterAll(async () => {
    await rt?.close();
  }, 30_000);

  it('keeps state across invokes on one session and isolates another session', async () => {
    const runtime = await createReady(rt.control, 'counter_state', 'counter', {
      environmentVariables: { AGENT_GREETING: 'hi' },
    });
    expect(runtime.status).toBe('READY');
    const a = sessionId('session-a');
    const first = await invokeJson(rt.data, runtime.agentRuntimeArn!, a, { hello: 1 });
    const second = await invokeJson(rt.data, runtime.agentRuntimeArn!, a, { hello: 2 });
    expect(first.count).toBe(1);
    expect(second.count).toBe(2);
    expect(second.fileCount).toBe(2);
    expect(second.pid).toBe(first.pid);
    const b = await invokeJson(rt.data, runtime.agentRuntimeArn!, sessionId('session-b'), {
      read: first.file,
    });
    expect(b.count).toBe(1);
    const hostPids = rt.server
      .sessions()
      .filter((s) => s.runtimeId === runtime.agentRuntimeId)
      .map((s) => s.worker!.id);
    expect(new Set(hostPids).size).toBe(2);
    expect((b.env as Record<string, string>).TMPDIR).not.toBe((first.env as Record<string, string>).TMPDIR);
    if (rt.server.isolation === 'bwrap') {
      expect(b.read).toBe('ERR:ENOENT');
      // Own PID namespace: the worker sees only its sandbox's few processes, not the host's (a
      // hundred and more); a pod's sandbox on the test kubelet holds a helper or two more at times.
      expect(b.visiblePids).toBeLessThan(10);
      expect(b.pid).toBeLessThan(5);
    }
    expect((first.env as Record<string, string>).OTEL_RESOURCE_ATTRIBUTES).toContain(
      `cloud.resource_id=${runtime.agentRuntimeArn}`,
    );
    expect((first.env as Record<string, string>).AGENT_GREETING).toBe('hi');
  });

  it('passes the payload, session, request and trace headers into the worker', async () => {
    const runtime = await createReady(rt.control, 'counter_headers', 'counter');
    const sid = sessionId('headers');
    const payload = '{"prompt": "exact  bytes\\u00e9"}';
    const out = await rt.data.send(
      new InvokeAgentRuntimeCommand({
        agentRuntimeArn: runtime.agentRuntimeArn!,
        runtimeSessionId: sid,
        contentType: 'application/json',
        accept: 'application/json, text/event-stream',
        traceParent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        traceId: 'Root=1-5759e988-bd862e3fe1be46a994272793',
        baggage: 'user.tier=gold',
        payload: new TextEncoder().encode(payload),
      }),
    );
    expect(out.contentType).toBe('application/json');
    expect(out.runtimeSessionId).toBe(sid);
    const body = JSON.parse(await out.response!.transformToString()) as {
      raw: string;
      headers: Record<string, string>;
    };
    expect(body.raw).toBe(payload);
    expect(body.headers['x-amzn-bedrock-agentcore-runtime-session-id']).toBe(sid);
    expect(body.headers['x-cloud-agent-runtime-session-id']).toBe(sid);
    expect(body.headers['x-amzn-bedrock-agentcore-runtime-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.headers.accept).toBe('application/json, text/event-stream');
    expect(body.headers['content-type']).toBe('application/json');
    // The caller's trace continues (traceparent wins over X-Amzn-Trace-Id) with the runtime's own
    // InvokeAgentRuntime span as the worker's parent, in both header forms.
    const parent = /^00-0af7651916cd43dd8448eb211c80319c-([0-9a-f]{16})-01$/.exec(
      body.headers.traceparent!,
    )?.[1];
    expect(parent).toBeDefined();
    expect(parent).not.toBe('b7ad6b7169203331');
    expect(body.headers['x-amzn-trace-id']).toBe(
      `Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=${parent};Sampled=1`,
    );
    expect(body.headers.baggage).toBe(`user.tier=gold,session.id=${sid}`);
  });

  it('streams SSE frames as the worker writes them', async () => {
    const runtime = await createReady(rt.control, 'streamer', 'streaming', {
      environmentVariables: { FRAMES: '4', FRAME_DELAY_MS: '150' },
    });
    const out = await rt.data.send(
      new InvokeAgentRuntimeCommand({
        agentRuntimeArn: runtime.agentRuntimeArn!,
        runtimeSessionId: sessionId('stream'),
        contentType: 'application/json',
        accept: 'text/event-stream',
        payload: new TextEncoder().encode('{}'),
      }),
    );
    expect(out.contentType).toBe('text/event-stream');
    const arrivals: { at: number; text: string }[] = [];
    for await (const chunk of out.response as AsyncIterable<Uint8Array>)
      arrivals.push({ at: Date.now(), text: Buffer.from(chunk).toString('utf8') });
    const frames = arrivals
      .map((a) => a.text)
      .join('')
      .split('\n\n')
      .filter(Boolean);
    expect(frames).toHaveLength(4);
    // Incremental: frames arrive in more than one piece, spread over the worker's 450 ms of writing
    // (a buffering proxy would deliver everything at once at the end).
    expect(arrivals.length).toBeGreaterThanOrEqual(2);
    expect(arrivals.at(-1)!.at - arrivals[0]!.at).toBeGreaterThanOrEqual(250);
  });

  it('pins sessions to their version: after an update new sessions get the new code, old ones keep theirs', async () => {
    const runtime = await createReady(rt.control, 'versioned', 'counter', {
      environmentVariables: { AGENT_VERSION: 'one' },
    });
    const old = sessionId('pinned-old');
    expect((await invokeJson(rt.data, runtime.agentRuntimeArn!, old, {})).version).toBe('one');
    const updated = await rt.control.send(
      new UpdateAgentRuntimeCommand({
        agentRuntimeId: runtime.agentRuntimeId!,
        agentRuntimeArtifact: { containerConfiguration: { containerUri: fixtureUri('counter') } },
        roleArn: ROLE_ARN,
        networkConfiguration: { networkMode: 'PUBLIC' },
        environmentVariables: { AGENT_VERSION: 'two' },
      }),
    );
    expect(updated.agentRuntimeVersion).toBe('2');
    expect(updated.status).toBe('UPDATING');
    expect((await pollStatus(rt.control, runtime.agentRuntimeId!)).status).toBe('READY');
    const fresh = await invokeJson(rt.data, runtime.agentRuntimeArn!, sessionId('pinned-new'), {});
    expect(fresh.version).toBe('two');
    const again = await invokeJson(rt.data, runtime.agentRuntimeArn!, old, {});
    expect(again.version).toBe('one');
    expect(again.count).toBe(2);
  });

  it('stops a session (404 for an unknown one) and restarts a stopped id fresh', async () => {
    const runtime = await createReady(rt.control, 'stoppable', 'counter');
    const sid = sessionId('stop-me');
    await invokeJson(rt.data, runtime.agentRuntimeArn!, sid, {});
    expect((await invokeJson(rt.data, runtime.agentRuntimeArn!, sid, {})).count).toBe(2);
    const worker = rt.server.sessions().find((s) => s.sessionId === sid)!.worker!;
    const stopped = await rt.data.send(
      new StopRuntimeSessionCommand({ agentRuntimeArn: runtime.agentRuntimeArn!, runtimeSessionId: sid }),
    );
    expect(stopped.runtimeSessionId).toBe(sid);
    expect(gone(worker)).toBe(true);
    await expect(
      rt.data.send(
        new StopRuntimeSessionCommand({ agentRuntimeArn: runtime.agentRuntimeArn!, runtimeSessionId: sid }),
      ),
    ).rejects.toBeInstanceOf(ResourceNotFoundException);
    expect((await invokeJson(rt.data, runtime.agentRuntimeArn!, sid, {})).count).toBe(1);
  });

  it('restarts a live session on a fresh worker, same id, with calls meanwhile served by the new one', async () => {
    const runtime = await createReady(rt.control, 'restartable', 'counter');
    const arn = runtime.agentRuntimeArn!;
    const sid = sessionId('restart-me');
    await invokeJson(rt.data, arn, sid, {});
    expect((await invokeJson(rt.data, arn, sid, {})).count).toBe(2);
    const old = rt.server.sessions().find((s) => s.sessionId === sid)!.worker!;
    const oldPid = old.pid;
    const client = createRuntimeClient({ url: rt.server.url });
    const restarting = client.restartSessions(arn);
    await waitFor(
      () => rt.server.sessions().some((s) => s.sessionId === sid && s.replacing),
      5000,
      'replacing',
    );
    // Sent while the new worker starts: it waits for it (no 409, not the old worker).
    const during = await invokeJson(rt.data, arn, sid, {});
    expect(await restarting).toEqual({ restarted: 1 });
    expect(during.count).toBe(1);
    expect(during.pid).not.toBe(oldPid);
    expect((await invokeJson(rt.data, arn, sid, {})).count).toBe(2);
    await waitFor(() => gone(old), 10_000, 'old worker gone');
    expect(await client.restartSessions(runtime.agentRuntimeId!)).toEqual({ restarted: 1 });
    const nothing = await createReady(rt.control, 'restartable_idle', 'counter');
    expect(await client.restartSessions(nothing.agentRuntimeArn!)).toEqual({ restarted: 0 });
    await expect(client.restartSessions('nope-0000000000')).rejects.toMatchObject({ status: 404 });
    const huge = await fetch(`${rt.server.url}/local/runtimes/${encodeURIComponent(arn)}/sessions/restart`, {
      method: 'POST',
      body: 'x'.repeat(100_000),
    });
    expect(huge.status).toBe(400);
    expect(await huge.text()).toMatch(/body.*limit is 1024/);
  });

  it('reaps idle sessions but keeps HealthyBusy ones alive', async () => {
    const lifecycleConfiguration = { idleRuntimeSessionTimeout: 1, maxLifetime: 60 };
    const idle = await createReady(rt.control, 'idler', 'counter', { lifecycleConfiguration });
    const busy = await createReady(rt.control, 'busy_worker', 'busy', { lifecycleConfiguration });
    expect(idle.lifecycleConfiguration).toEqual(lifecycleConfiguration);
    // Both at once: a slow sandbox start of one must not outlast the other's 1 s idle timeout.
    await Promise.all([
      invokeJson(rt.data, idle.agentRuntimeArn!, sessionId('idle'), {}),
      invokeJson(rt.data, busy.agentRuntimeArn!, sessionId('busy'), {}),
    ]);
    const find = (id: string) => rt.server.sessions().find((s) => s.runtimeId === id);
    const busyWorker = find(busy.agentRuntimeId!)!.worker!;
    const idleWorker = find(idle.agentRuntimeId!)!.worker!;
    await waitFor(() => find(idle.agentRuntimeId!) === undefined, 10_000, 'idle session reaped');
    expect(gone(idleWorker)).toBe(true);
    // The busy one has been idle just as long (its time_of_last_update is older still) and survives.
    expect(find(busy.agentRuntimeId!)?.state).toBe('ready');
    expect(find(busy.agentRuntimeId!)?.ping.status).toBe('HealthyBusy');
    expect(gone(busyWorker)).toBe(false);
  });

  it('stops even a HealthyBusy session at its max lifetime', async () => {
    const runtime = await createReady(rt.control, 'short_lived', 'busy', {
      lifecycleConfiguration: { idleRuntimeSessionTimeout: 1, maxLifetime: 1 },
    });
    const sid = sessionId('short-lived');
    await invokeJson(rt.data, runtime.agentRuntimeArn!, sid, {});
    const worker = rt.server.sessions().find((s) => s.sessionId === sid)!.worker!;
    await waitFor(() => !rt.server.sessions().some((s) => s.sessionId === sid), 10_000, 'max lifetime stop');
    expect(gone(worker)).toBe(true);
    expect(
      rt.logs.some((l) => l.msg === 'session stopped' && l.sessionId === sid && l.reason === 'max-lifetime'),
    ).toBe(true);
  });

  it('turns a crash into 424 and recovers on the next invoke', async () => {
    const runtime = await createReady(rt.control, 'crasher', 'crashing');
    const sid = sessionId('crash');
    const before = await invokeJson(rt.data, runtime.agentRuntimeArn!, sid, {});
    const crash = invokeJson(rt.data, runtime.agentRuntimeArn!, sid, { crash: true });
    await expect(crash).rejects.toBeInstanceOf(RuntimeClientError);
    await expect(crash).rejects.toMatchObject({ $metadata: { httpStatusCode: 424 } });
    await waitFor(
      () => !rt.server.sessions().some((s) => s.sessionId === sid),
      10_000,
      'crashed session gone',
    );
    const after = await invokeJson(rt.data, runtime.agentRuntimeArn!, sid, {});
    expect(after.ok).toBe(true);
    expect(after.pid).toBeDefined();
    expect(before.ok).toBe(true);
  });

  it('maps a container error status to 424 keeping its body in the message', async () => {
    const runtime = await createReady(rt.control, 'failer', 'crashing');
    const error = await invokeJson(rt.data, runtime.agentRuntimeArn!, sessionId('fail'), {
      fail: true,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RuntimeClientError);
    expect((error as Error).message).toContain('Received error (500) from runtime');
    expect((error as Error).message).toContain('tool exploded: weather API unreachable');
  });
});

describe('session start failures, limits and shutdown', () => {
  const opened: TestRuntime[] = [];
  const start = async (options: Parameters<typeof startRuntime>[0]) => {
    const rt = await startRuntime(options);
    opened.push(rt);
    return rt;
  };
  afterAll(async () => {
    await Promise.all(opened.map((rt) => rt.close()));
  }, 30_000);

  it('gives the faithful terse 424 message when asked to', async () => {
    const rt = await start({ terseErrors: true });
    const runtime = await createReady(rt.control, 'terse', 'crashing');
    const error = await invokeJson(rt.data, runtime.agentRuntimeArn!, sessionId('terse'), {
      fail: true,
    }).catch((e: unknown) => e);
    expect((error as Error).message).toBe(
      'Received error (500) from runtime. Please check your CloudWatch logs for more information.',
    );
  });

  it('answers 424 with the worker output when it does not start in time or crashes on start', async () => {
    const rt = await start({ startTimeoutMs: 2500 });
    const slow = await createReady(rt.control, 'slow', 'slow-start', {
      environmentVariables: { START_DELAY_MS: '30000' },
    });
    const timeout = await invokeJson(rt.data, slow.agentRuntimeArn!, sessionId('slow'), {}).catch(
      (e: unknown) => e,
    );
    expect(timeout).toBeInstanceOf(RuntimeClientError);
    expect((timeout as Error).message).toContain('initialization time exceeded');
    expect((timeout as Error).message).toContain('slow-start: warming up for 30000 ms');
    const broken = await createReady(rt.control, 'broken', 'slow-start', {
      environmentVariables: { CRASH_ON_START: '1' },
    });
    const crash = await invokeJson(rt.data, broken.agentRuntimeArn!, sessionId('broken'), {}).catch(
      (e: unknown) => e,
    );
    expect(crash).toBeInstanceOf(RuntimeClientError);
    expect((crash as Error).message).toContain('exited with code 1');
    expect((crash as Error).message).toContain('missing-dependency');
    expect(rt.server.sessions()).toHaveLength(0);
  });

  it('answers 409 RetryableConflict while a session starts and 402 over the session cap', async () => {
    const rt = await start({ maxSessions: 2 });
    const slow = await createReady(rt.control, 'slowish', 'slow-start', {
      environmentVariables: { START_DELAY_MS: '600' },
    });
    const { data } = sdkClients(rt.server.url, 'us-east-1', 'AKIDLOCAL', 1);
    const sid = sessionId('racing');
    const results = await Promise.allSettled([
      invokeJson(data, slow.agentRuntimeArn!, sid, {}),
      new Promise((r) => setTimeout(r, 150)).then(() => invokeJson(data, slow.agentRuntimeArn!, sid, {})),
    ]);
    // Whichever reached the runtime second met a starting session.
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(rejected.reason).toBeInstanceOf(RetryableConflictException);
    expect((rejected.reason as Error).message).toBe('Session operation in progress, please retry');
    await invokeJson(data, slow.agentRuntimeArn!, sessionId('second'), {});
    const over = await invokeJson(data, slow.agentRuntimeArn!, sessionId('third'), {}).catch(
      (e: unknown) => e,
    );
    expect(over).toBeInstanceOf(ServiceQuotaExceededException);
    expect((over as { $metadata: { httpStatusCode: number } }).$metadata.httpStatusCode).toBe(402);
    data.destroy();
  });

  it('queues worker boots beyond maxConcurrentStarts', async () => {
    const rt = await start({ maxConcurrentStarts: 1 });
    const slow = await createReady(rt.control, 'queued', 'slow-start', {
      environmentVariables: { START_DELAY_MS: '300' },
    });
    await Promise.all(['q1', 'q2'].map((s) => invokeJson(rt.data, slow.agentRuntimeArn!, sessionId(s), {})));
    const started = rt.logs.filter((l) => l.msg === 'session started').map((l) => Date.parse(String(l.time)));
    const warming = rt.logs
      .filter((l) => String(l.msg).startsWith('slow-start: warming up'))
      .map((l) => Date.parse(String(l.time)));
    expect(started).toHaveLength(2);
    expect(warming).toHaveLength(2);
    // The second worker was only spawned once the first had answered /ping.
    expect(Math.max(...warming)).toBeGreaterThanOrEqual(Math.min(...started));
  });

  it('sizes the warm pool from the recent demand, up to AGENTRT_WARM_POOL_MAX', async () => {
    const rt = await start({ warmPoolMax: 3 });
    const runtime = await createReady(rt.control, 'demand', 'counter');
    const arn = runtime.agentRuntimeArn!;
    const pidOf = async (label: string) =>
      ((await invokeJson(rt.data, arn, sessionId(label), {})) as { pid: number }).pid;
    expect(rt.server.warmCount(runtime.agentRuntimeId!)).toBe(0); // no demand yet, no idle workers
    for (const label of ['demand-a', 'demand-b', 'demand-c', 'demand-d']) await pidOf(label);
    await waitFor(() => rt.server.warmCount(runtime.agentRuntimeId!) === 3, 20_000, 'three warm workers');
    const burst = ['demand-e', 'demand-f', 'demand-g'];
    await Promise.all(burst.map(pidOf));
    // The three new sessions adopted the pre-started workers instead of starting cold.
    const warm = rt.server.sessions().filter((s) => burst.map(sessionId).includes(s.sessionId));
    expect(warm.map((s) => s.warm)).toEqual([true, true, true]);
  });

  it('adopts a pre-started warm-pool worker for a new session', async () => {
    const rt = await start({ warmPoolSize: 1 });
    const runtime = await createReady(rt.control, 'warm', 'counter');
    await waitFor(() => rt.server.warmCount(runtime.agentRuntimeId!) === 1, 15_000, 'warm worker');
    const pooledPid = (await invokeJson(rt.data, runtime.agentRuntimeArn!, sessionId('warm'), {})) as {
      count: number;
    };
    expect(pooledPid.count).toBe(1);
    expect(rt.server.sessions()[0]!.warm).toBe(true);
    // Output after adoption is tagged with the session that adopted the worker.
    await waitFor(
      () => rt.logs.some((l) => l.msg === 'invocation 1' && l.sessionId === sessionId('warm')),
      5000,
      'tagged log line',
    );
    await waitFor(() => rt.server.warmCount(runtime.agentRuntimeId!) === 1, 15_000, 'pool refilled');
  });

  it('kills every worker when the runtime closes (no orphans)', async () => {
    const rt = await startRuntime({ warmPoolSize: 1 });
    const runtime = await createReady(rt.control, 'orphans', 'counter');
    await Promise.all(
      [1, 2, 3].map((i) => invokeJson(rt.data, runtime.agentRuntimeArn!, sessionId(`orphan-${i}`), {})),
    );
    await waitFor(() => rt.server.warmCount() === 1, 15_000, 'warm worker');
    const workers = rt.server.sessions().map((s) => s.worker!);
    expect(workers).toHaveLength(3);
    await rt.close();
    for (const worker of workers) expect(gone(worker)).toBe(true);
  });
});

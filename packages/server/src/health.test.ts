import { afterEach, describe, expect, it } from 'vitest';
import { HealthTracker } from './health.js';
import { closeAll, invoke, readFrames, start, until } from './testing.test.util.js';

afterEach(closeAll);

interface Ping {
  status: string;
  time_of_last_update: number;
}
const ping = async (url: string): Promise<Ping> => {
  const res = await fetch(`${url}/ping`);
  expect(res.status).toBe(200);
  return (await res.json()) as Ping;
};

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('/ping over real sockets', () => {
  it('answers Healthy with unix seconds, and HealthyBusy while an invocation runs', async () => {
    const g = gate();
    const { url } = await start(async () => {
      await g.opened;
      return 'done';
    });
    const idle = await ping(url);
    expect(idle.status).toBe('Healthy');
    expect(Math.abs(idle.time_of_last_update - Date.now() / 1000)).toBeLessThan(60);
    const pending = invoke(url, {});
    await until(async () => (await ping(url)).status === 'HealthyBusy');
    g.open();
    expect(await (await pending).json()).toBe('done');
    expect((await ping(url)).status).toBe('Healthy');
  });

  it('stays HealthyBusy while a stream is open', async () => {
    const g = gate();
    const { url } = await start(async function* () {
      yield 'first';
      await g.opened;
      yield 'last';
    });
    const res = await invoke(url, {});
    const read = readFrames(res);
    await until(async () => (await ping(url)).status === 'HealthyBusy');
    g.open();
    expect(await read).toHaveLength(2);
    await until(async () => (await ping(url)).status === 'Healthy');
  });

  it('tracks registered tasks, trackTask promises, and force/clear', async () => {
    const { url, app } = await start(() => 'ok');
    const id = app.addAsyncTask('index-docs', { docs: 3 });
    expect((await ping(url)).status).toBe('HealthyBusy');
    expect(app.getAsyncTaskInfo()).toMatchObject({
      activeCount: 1,
      runningJobs: [{ id, name: 'index-docs', metadata: { docs: 3 } }],
    });
    expect(app.completeAsyncTask(id)).toBe(true);
    expect(app.completeAsyncTask(id)).toBe(false);
    expect((await ping(url)).status).toBe('Healthy');

    const g = gate();
    const tracked = app.trackTask(g.opened, 'upload');
    expect((await ping(url)).status).toBe('HealthyBusy');
    g.open();
    await tracked;
    await until(async () => (await ping(url)).status === 'Healthy');

    app.forcePingStatus('HealthyBusy');
    expect((await ping(url)).status).toBe('HealthyBusy');
    app.clearForcedPingStatus();
    expect((await ping(url)).status).toBe('Healthy');
    const failing = app.trackTask(Promise.reject(new Error('x')), 'fails');
    await expect(failing).rejects.toThrow('x');
    await until(async () => (await ping(url)).status === 'Healthy');
  });

  it('supports sync and async custom ping handlers; a failing handler falls back to automatic', async () => {
    let mode: 'sync' | 'async' | 'throw' | 'auto' = 'sync';
    const { url } = await start(() => 'ok', {
      pingHandler: () => {
        if (mode === 'sync') return 'HealthyBusy';
        if (mode === 'async') return Promise.resolve('HealthyBusy' as const);
        if (mode === 'throw') throw new Error('bug in handler');
        return undefined;
      },
    });
    expect((await ping(url)).status).toBe('HealthyBusy');
    mode = 'async';
    expect((await ping(url)).status).toBe('HealthyBusy');
    mode = 'throw';
    expect((await ping(url)).status).toBe('Healthy');
    mode = 'auto';
    expect((await ping(url)).status).toBe('Healthy');
  });

  it('answers /ping while a handler is busy, and is not counted as work itself', async () => {
    const g = gate();
    const { url } = await start(async () => g.opened);
    const pending = invoke(url, {});
    await until(async () => (await ping(url)).status === 'HealthyBusy');
    const started = performance.now();
    await ping(url);
    expect(performance.now() - started).toBeLessThan(1000);
    g.open();
    await pending;
  });
});

describe('time_of_last_update', () => {
  it('changes only when the status changes', async () => {
    let nowMs = 1_000_000;
    const h = new HealthTracker({ now: () => nowMs });
    expect(await h.ping()).toEqual({ status: 'Healthy', time_of_last_update: 1000 });
    nowMs += 5000;
    expect((await h.ping()).time_of_last_update).toBe(1000);
    const end = h.beginInvocation();
    nowMs += 5000;
    expect(await h.ping()).toEqual({ status: 'HealthyBusy', time_of_last_update: 1005 });
    const end2 = h.beginInvocation();
    nowMs += 5000;
    end();
    expect((await h.ping()).time_of_last_update).toBe(1005);
    nowMs += 5000;
    end2();
    end2(); // ending twice must not go negative
    nowMs += 5000;
    expect(await h.ping()).toEqual({ status: 'Healthy', time_of_last_update: 1020 });
    expect(h.getAsyncTaskInfo().inFlightInvocations).toBe(0);
    h.forcePingStatus('Healthy');
    expect((await h.ping()).time_of_last_update).toBe(1020);
    expect(() => h.forcePingStatus('Bogus' as never)).toThrow(TypeError);
  });
});

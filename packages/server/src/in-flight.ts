import type { HealthTracker } from './health.js';
import type { InvocationContext } from './request-context.js';

/** The invocations (open streams and WebSockets included) in flight, and whether the app drains. */
export interface InFlight {
  /** Shutting down: responses carry `Connection: close`, new invocations get 503. */
  draining: boolean;
  /** Invocations in flight. */
  readonly count: number;
  /** Counts one invocation (or open WebSocket) as in flight: `/ping` busy, drain waits for it. */
  enter(): () => void;
  /** Registers an invocation's context, so that {@link InFlight.abortAll} reaches it. */
  add(invocation: InvocationContext): void;
  delete(invocation: InvocationContext): void;
  /** Resolves once no invocation is in flight. */
  whenIdle(): Promise<void>;
  /** Fires every registered invocation's abort signal. */
  abortAll(reason: unknown): void;
}

export function createInFlight(health: HealthTracker): InFlight {
  const invocations = new Set<InvocationContext>();
  let active = 0;
  let idleWaiters: Array<() => void> = [];
  const leave = (done: () => void) => {
    done();
    if (--active === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  };
  return {
    draining: false,
    get count() {
      return active;
    },
    enter: () => {
      const done = health.beginInvocation();
      active++;
      return () => leave(done);
    },
    add: (invocation) => void invocations.add(invocation),
    delete: (invocation) => void invocations.delete(invocation),
    whenIdle: () =>
      active === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve)),
    abortAll: (reason) => {
      for (const invocation of invocations) invocation.abort(reason);
    },
  };
}

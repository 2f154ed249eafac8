/** The two statuses of the container contract's `/ping`. */
export type PingStatus = 'Healthy' | 'HealthyBusy';

/** The `/ping` response body. `time_of_last_update` is unix seconds of the last status change. */
export interface PingResponse {
  status: PingStatus;
  time_of_last_update: number;
}

/** A custom ping handler; it may be async. Returning undefined falls back to automatic tracking. */
export type PingHandler = () => PingStatus | undefined | Promise<PingStatus | undefined>;

/** One registered background task, as {@link HealthTracker.getAsyncTaskInfo} reports it. */
export interface RunningTask {
  id: number;
  name: string;
  durationMs: number;
  metadata?: Readonly<Record<string, unknown>>;
}

/** Snapshot of the tracked work. */
export interface AsyncTaskInfo {
  /** Registered background tasks in flight. */
  activeCount: number;
  /** In-flight invocations (including open streams). */
  inFlightInvocations: number;
  runningJobs: RunningTask[];
}

const isPingStatus = (value: unknown): value is PingStatus => value === 'Healthy' || value === 'HealthyBusy';

/**
 * Decides `/ping`'s answer: a forced status first, then a custom handler, then automatic tracking
 * (HealthyBusy while any invocation, stream or registered task is in flight). The timestamp moves
 * only when the reported status changes, because the platform measures idle time from it.
 */
export class HealthTracker {
  readonly #tasks = new Map<
    number,
    { name: string; startMs: number; metadata?: Readonly<Record<string, unknown>> }
  >();
  #nextTaskId = 1;
  #inFlight = 0;
  #forced: PingStatus | undefined;
  #handler: PingHandler | undefined;
  #status: PingStatus = 'Healthy';
  #changedAtMs: number;
  readonly #now: () => number;

  constructor(options: { pingHandler?: PingHandler; now?: () => number } = {}) {
    this.#handler = options.pingHandler;
    this.#now = options.now ?? Date.now;
    this.#changedAtMs = this.#now();
  }

  /** Marks one invocation (or stream) as started; call the returned function exactly once when it ends. */
  beginInvocation(): () => void {
    this.#inFlight++;
    this.#refreshAuto();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#inFlight--;
      this.#refreshAuto();
    };
  }

  /** Registers a background task; the status is HealthyBusy until {@link completeAsyncTask}. */
  addAsyncTask(name: string, metadata?: Readonly<Record<string, unknown>>): number {
    const id = this.#nextTaskId++;
    this.#tasks.set(id, { name, startMs: this.#now(), ...(metadata ? { metadata } : {}) });
    this.#refreshAuto();
    return id;
  }

  /** Ends a background task. Returns false when the id is unknown (already completed). */
  completeAsyncTask(id: number): boolean {
    const removed = this.#tasks.delete(id);
    if (removed) this.#refreshAuto();
    return removed;
  }

  /** Counts `work` as a background task until it settles; returns it unchanged. */
  trackTask<T>(work: Promise<T>, name = 'task'): Promise<T> {
    const id = this.addAsyncTask(name);
    void work.then(
      () => this.completeAsyncTask(id),
      () => this.completeAsyncTask(id),
    );
    return work;
  }

  /** Reports `status` regardless of the tracked work until {@link clearForcedPingStatus}. */
  forcePingStatus(status: PingStatus): void {
    if (!isPingStatus(status))
      throw new TypeError(`ping status must be Healthy or HealthyBusy, got ${String(status)}`);
    this.#forced = status;
    this.#set(status);
  }

  /** Goes back to the custom handler or automatic tracking. */
  clearForcedPingStatus(): void {
    this.#forced = undefined;
    this.#refreshAuto();
  }

  /** Replaces the custom ping handler (undefined removes it). */
  setPingHandler(handler: PingHandler | undefined): void {
    this.#handler = handler;
  }

  /** The automatic status alone: HealthyBusy while anything is tracked. */
  get automaticStatus(): PingStatus {
    return this.#inFlight > 0 || this.#tasks.size > 0 ? 'HealthyBusy' : 'Healthy';
  }

  getAsyncTaskInfo(): AsyncTaskInfo {
    const now = this.#now();
    return {
      activeCount: this.#tasks.size,
      inFlightInvocations: this.#inFlight,
      runningJobs: [...this.#tasks].map(([id, t]) => ({
        id,
        name: t.name,
        durationMs: now - t.startMs,
        ...(t.metadata ? { metadata: t.metadata } : {}),
      })),
    };
  }

  /**
   * The `/ping` answer. A custom handler that throws or returns something else than a status is
   * ignored (automatic status), so a bug in it cannot make the container look unhealthy.
   */
  async ping(): Promise<PingResponse> {
    let status = this.#forced;
    if (status === undefined && this.#handler) {
      try {
        const custom = await this.#handler();
        if (isPingStatus(custom)) status = custom;
      } catch {
        // Deliberately ignored: the automatic status is the safe answer (see the doc comment).
      }
    }
    this.#set(status ?? this.automaticStatus);
    return { status: this.#status, time_of_last_update: Math.floor(this.#changedAtMs / 1000) };
  }

  #refreshAuto(): void {
    if (this.#forced === undefined && this.#handler === undefined) this.#set(this.automaticStatus);
  }

  #set(status: PingStatus): void {
    if (status === this.#status) return;
    this.#status = status;
    this.#changedAtMs = this.#now();
  }
}

// What a worker in the cluster (a pod, or a claim's pod) is to the session manager beyond its own
// lifecycle: no host process (pid 0), the container contract's port, exit listeners, and no
// cgroup usage here (a pod's metrics are the cluster's).
import { type WorkerExit } from '../../worker.js';
import { POD_PORT } from './pod-spec.js';

export abstract class ClusterWorker {
  readonly pid = 0;
  readonly port = POD_PORT;
  readonly socketPath = undefined;
  readonly sandboxPid = undefined;
  abstract readonly exited: WorkerExit | undefined;
  private readonly exitListeners = new Set<(exit: WorkerExit) => void>();

  get exitListenerCount(): number {
    return this.exitListeners.size;
  }

  /** Tells every exit listener, once. */
  protected notifyExit(exit: WorkerExit): void {
    for (const listener of this.exitListeners) listener(exit);
    this.exitListeners.clear();
  }

  onExit(listener: (exit: WorkerExit) => void): () => void {
    if (this.exited) {
      listener(this.exited);
      return () => undefined;
    }
    this.exitListeners.add(listener);
    return () => this.exitListeners.delete(listener);
  }

  usage(): undefined {
    return undefined;
  }
}

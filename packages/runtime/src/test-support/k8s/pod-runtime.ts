// What the test API server asks of the node a pod is bound to (a kubelet's own API, which the real
// API server proxies to): a pod's log and a command run in it.
import { type Readable, type Writable } from 'node:stream';
import { type KubeObject } from './objects.js';

export interface LogOptions {
  container: string | undefined;
  tailLines: number | undefined;
  follow: boolean;
}

export interface ExecOptions {
  container: string | undefined;
  command: string[];
  stdin: Readable | undefined;
  stdout: Writable;
  stderr: Writable;
}

export interface PodRuntime {
  /** Writes the pod's log to `out` and ends it (follow: once the pod's container ends or out closes). */
  logs(pod: KubeObject, options: LogOptions, out: Writable): Promise<void>;
  /** Runs the command in the pod; resolves with its exit code. */
  exec(pod: KubeObject, options: ExecOptions): Promise<number>;
}

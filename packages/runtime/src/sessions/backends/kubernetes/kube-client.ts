// What both modes of the kubernetes backend share: the API client's configuration, how a command
// runs in a session's pod, and how an API error reads as a start failure.
import { KubeConfig } from '@kubernetes/client-node';
import { type RuntimeConfig } from '../../../config.js';
import { type CommandSpawn } from '../../backend.js';
import { BackendUnavailableError, WorkerStartError } from '../../worker.js';
import { podExec, underTimeout } from './pod-exec.js';

/** The configured kubeconfig (KUBECONFIG), else the in-cluster service account. */
export function loadKubeConfig(config: Readonly<RuntimeConfig>): KubeConfig {
  const kc = new KubeConfig();
  const file = config.kubeconfig || process.env.KUBECONFIG;
  if (file) kc.loadFromFile(file);
  else kc.loadFromCluster();
  return kc;
}

/**
 * InvokeAgentRuntimeCommand in a session's pod (`pod()`: its name when the command runs): pods/exec
 * from the runtime itself (pod-exec.ts), under the command's timeout.
 */
export const podCommand =
  (kubeConfig: KubeConfig, namespace: string, pod: () => string) =>
  (argv: string[], timeoutS?: number): CommandSpawn => {
    const command = underTimeout(argv, timeoutS);
    const target = { kubeConfig, namespace, pod: pod(), container: 'agent' };
    return { argv: command, cwd: '/', env: {}, cgroup: undefined, run: () => podExec(target, command) };
  };

/** A kube API error as a start failure that says what the cluster answered. */
export function apiFailure(what: string, error: unknown): WorkerStartError {
  const e = error as { code?: number; body?: string; message?: string; cause?: { code?: string } };
  let detail = e.cause?.code ?? e.message ?? String(error);
  try {
    detail = (JSON.parse(e.body ?? '') as { message?: string }).message ?? detail;
  } catch {
    // not a Status body: the transport error says it
  }
  const text = `kubernetes: ${what} failed${e.code ? ` (${e.code})` : ''}: ${detail}`;
  // No HTTP answer at all: the API server is unreachable, and nothing was made.
  return e.code === undefined
    ? new BackendUnavailableError(`${text}; the API server is unreachable, retry`)
    : new WorkerStartError(text);
}

/** The HTTP status of a client-node API error (undefined: no answer). */
export const statusOf = (error: unknown): number | undefined => (error as { code?: number }).code;

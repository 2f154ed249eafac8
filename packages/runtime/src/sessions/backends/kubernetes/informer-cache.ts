// An informer (list, then watch from its resourceVersion) as the backend's in-memory view of one
// kind in its namespace: objects are read from memory, never polled, and a caller can follow one
// object's changes. A cut watch is resumed from where it was; a 410 relists (client-node).
import { type Informer, type KubernetesObject, type ObjectCache } from '@kubernetes/client-node';
import { type Logger } from '../../../logger.js';

export interface InformerCache<T> {
  get(name: string): T | undefined;
  all(): T[];
  /** Calls `listener` on every change of object `name` until it returns true or the call it returns is made. */
  follow(name: string, listener: (object: T, deleted: boolean) => boolean): () => void;
  /** Calls `listener` on every change of any object. */
  onChange(listener: (object: T, deleted: boolean) => void): void;
  /** Resolves once the first list is in. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** Restart delay after the watch failed (API server unreachable): doubled up to 5 s. */
const RETRY_MS = { first: 200, max: 5000 };

/** `what` names the kind in the log; `onEvent` hears every change before the followers do. */
export function createInformerCache<T extends KubernetesObject>(
  informer: Informer<T> & ObjectCache<T>,
  options: {
    namespace: string;
    logger: Logger;
    what: string;
    onEvent?: (object: T, deleted: boolean) => void;
  },
): InformerCache<T> {
  const { namespace, logger, what } = options;
  const listeners = new Map<string, Set<(object: T, deleted: boolean) => void>>();
  const everyChange: ((object: T, deleted: boolean) => void)[] = [];
  let closed = false;
  let retry = RETRY_MS.first;
  const emit = (object: T, deleted: boolean) => {
    retry = RETRY_MS.first;
    options.onEvent?.(object, deleted);
    for (const listener of everyChange) listener(object, deleted);
    for (const listener of listeners.get(object.metadata?.name ?? '') ?? []) listener(object, deleted);
  };
  informer.on('add', (o) => emit(o, false));
  informer.on('update', (o) => emit(o, false));
  informer.on('delete', (o) => emit(o, true));
  informer.on('error', (error: unknown) => {
    if (closed) return;
    logger.warn(`kubernetes: ${what} watch failed; resuming`, { error: String(error), retryMs: retry });
    setTimeout(() => void informer.start().catch(() => undefined), retry).unref();
    retry = Math.min(retry * 2, RETRY_MS.max);
  });
  const started = informer.start();
  return {
    get: (name) => informer.get(name, namespace),
    all: () => [...informer.list(namespace)],
    follow(name, listener) {
      const set = listeners.get(name) ?? new Set();
      listeners.set(name, set);
      const wrapped = (object: T, deleted: boolean) => {
        if (listener(object, deleted)) stop();
      };
      const stop = () => {
        set.delete(wrapped);
        if (set.size === 0) listeners.delete(name);
      };
      set.add(wrapped);
      return stop;
    },
    onChange: (listener) => void everyChange.push(listener),
    ready: () => started,
    async close() {
      closed = true;
      await informer.stop();
    },
  };
}

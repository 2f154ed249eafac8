// The test API server's recent changes, as etcd keeps them for watches: each committed change is
// kept (up to a limit, older ones forgotten: a watch from before them gets 410 Gone) and sent to
// the open watches whose filter it passes.
import { KubeError, type KubeObject } from './objects.js';
import { type ResourceType, typeKey } from './resource-types.js';
import { type Selector } from './selectors.js';

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoredEvent {
  type: EventType;
  object: KubeObject;
  rv: number;
  typeKey: string;
}

export interface WatchFilter {
  type: ResourceType;
  namespace: string | undefined;
  selector: Selector;
}

interface Watcher extends WatchFilter {
  send(event: StoredEvent): void;
}

/** Whether a watch of `filter` sees `object` (namespace and labels). */
export type Visible = (filter: WatchFilter, object: KubeObject) => boolean;

export class ChangeLog {
  private readonly history: StoredEvent[] = [];
  private readonly watchers = new Set<Watcher>();
  /** Changes kept for watches to resume from; older resourceVersions get 410 Gone. */
  limit = 2000;

  constructor(private readonly visible: Visible) {}

  /** Keeps a committed change and sends it to the watches that see it. */
  record(event: StoredEvent): void {
    this.history.push(event);
    if (this.history.length > this.limit) this.history.splice(0, this.history.length - this.limit);
    for (const watcher of this.watchers)
      if (event.typeKey === typeKey(watcher.type) && this.visible(watcher, event.object)) watcher.send(event);
  }

  /**
   * Sends the kept changes after resourceVersion `start` that `filter` sees, then every new one
   * until the returned function is called. `revision` is the store's current one.
   */
  follow(
    filter: WatchFilter,
    start: number,
    revision: number,
    send: (event: StoredEvent) => void,
  ): () => void {
    if (start > 0) {
      const oldest = this.history[0]?.rv ?? revision + 1;
      if (start < oldest - 1 && start < revision)
        throw new KubeError('Gone', `too old resource version: ${start} (${oldest - 1})`);
      for (const event of this.history)
        if (event.rv > start && event.typeKey === typeKey(filter.type) && this.visible(filter, event.object))
          send(event);
    }
    const watcher: Watcher = { ...filter, send };
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  /** Forgets the kept changes (as an etcd compaction). */
  compact(): void {
    this.history.length = 0;
  }
}

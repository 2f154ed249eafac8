/** One EventSource on /api/live for the whole page; views subscribe to arriving spans. */
import type { LiveSpansEvent } from '../../src/wire-types.js';
import { toSpanView } from './convert.js';
import type { SpanView } from './view-types.js';

export type LiveStatus = 'connecting' | 'open' | 'closed';
type SpansListener = (spans: SpanView[]) => void;
type StatusListener = (status: LiveStatus) => void;

export interface LiveFeed {
  subscribe(listener: SpansListener): () => void;
  onStatus(listener: StatusListener): () => void;
  status(): LiveStatus;
  /** Spans received since the page opened (newest last), capped. */
  recent(): SpanView[];
}

const MAX_RECENT = 2000;

export function createLiveFeed(url = '/api/live'): LiveFeed {
  const listeners = new Set<SpansListener>();
  const statusListeners = new Set<StatusListener>();
  let recent: SpanView[] = [];
  let status: LiveStatus = 'connecting';
  const setStatus = (s: LiveStatus): void => {
    status = s;
    for (const l of statusListeners) l(s);
  };
  if (typeof EventSource !== 'undefined') {
    const source = new EventSource(url);
    source.onopen = () => setStatus('open');
    // EventSource reconnects by itself; show the gap meanwhile.
    source.onerror = () => setStatus(source.readyState === EventSource.CLOSED ? 'closed' : 'connecting');
    source.addEventListener('spans', (e: MessageEvent<string>) => {
      let data: LiveSpansEvent;
      try {
        data = JSON.parse(e.data) as LiveSpansEvent;
      } catch {
        return; // A malformed event must not break the stream.
      }
      if (!Array.isArray(data.spans) || data.spans.length === 0) return;
      const spans = data.spans.map((s) => toSpanView(s));
      recent = recent.concat(spans);
      if (recent.length > MAX_RECENT) recent = recent.slice(recent.length - MAX_RECENT);
      for (const l of listeners) l(spans);
    });
  }
  return {
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    onStatus(listener) {
      statusListeners.add(listener);
      return () => statusListeners.delete(listener);
    },
    status: () => status,
    recent: () => recent,
  };
}

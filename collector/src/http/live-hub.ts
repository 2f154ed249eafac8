import type { ServerResponse } from 'node:http';
import type { LiveSpansEvent, SpanRecord } from '../wire-types.js';

const MAX_SPANS_PER_EVENT = 200;
/** A client this far behind misses events instead of growing our memory. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

/** Server-sent events of newly committed spans (`event: spans`). */
export function createLiveHub() {
  const clients = new Set<ServerResponse>();
  const keepAlive = setInterval(() => {
    for (const res of clients) res.write(': keep-alive\n\n');
  }, 15_000);
  keepAlive.unref();

  return {
    get size(): number {
      return clients.size;
    },
    add(res: ServerResponse): void {
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      res.write('retry: 2000\n: connected\n\n');
      clients.add(res);
      res.on('close', () => clients.delete(res));
    },
    publish(spans: SpanRecord[]): void {
      if (!clients.size) return;
      const events: string[] = [];
      for (let i = 0; i < spans.length; i += MAX_SPANS_PER_EVENT) {
        const data: LiveSpansEvent = { spans: spans.slice(i, i + MAX_SPANS_PER_EVENT) };
        events.push(`event: spans\ndata: ${JSON.stringify(data)}\n\n`);
      }
      const text = events.join('');
      for (const res of clients) {
        if (res.writableLength < MAX_BUFFERED_BYTES) res.write(text);
      }
    },
    close(): void {
      clearInterval(keepAlive);
      for (const res of clients) res.end();
      clients.clear();
    },
  };
}

import type { Logger } from '../logger.js';
import type { Signal } from '../otlp/encode-response.js';

/** How many forwarded requests may be in flight before new ones are dropped (never queued forever). */
const MAX_IN_FLIGHT = 64;
const TIMEOUT_MS = 10_000;

/** The URL to POST a signal to: an endpoint base gets `/v1/<signal>`; a full signal URL is kept. */
export function forwardUrl(endpoint: string, signal: Signal): string {
  const trimmed = endpoint.replace(/\/+$/, '');
  const m = /\/v1\/(traces|logs|metrics)$/.exec(trimmed);
  return m ? `${trimmed.slice(0, m.index)}/v1/${signal}` : `${trimmed}/v1/${signal}`;
}

/**
 * Forwards received OTLP bodies to upstream endpoints, fire-and-forget: ingest never waits for an
 * upstream, and when upstreams are slow the excess is dropped and counted.
 */
export function createForwarder(endpoints: readonly string[], logger: Logger) {
  let inFlight = 0;
  const stats = { forwarded: 0, failed: 0, dropped: 0 };
  const warned = new Map<string, number>();

  function warnOnce(endpoint: string, msg: string, fields: Record<string, unknown>): void {
    const now = Date.now();
    if ((warned.get(endpoint) ?? 0) > now - 60_000) return;
    warned.set(endpoint, now);
    logger.warn(msg, { endpoint, ...fields });
  }

  function forward(signal: Signal, body: Buffer, contentType: string): void {
    for (const endpoint of endpoints) {
      if (inFlight >= MAX_IN_FLIGHT) {
        stats.dropped++;
        warnOnce(endpoint, 'forward queue full; dropping', { signal });
        continue;
      }
      inFlight++;
      fetch(forwardUrl(endpoint, signal), {
        method: 'POST',
        headers: { 'content-type': contentType },
        body: new Uint8Array(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      })
        .then(async (res) => {
          await res.arrayBuffer();
          if (res.ok) stats.forwarded++;
          else {
            stats.failed++;
            warnOnce(endpoint, 'forward rejected by upstream', { signal, status: res.status });
          }
        })
        .catch((error: unknown) => {
          stats.failed++;
          warnOnce(endpoint, 'forward failed', { signal, error });
        })
        .finally(() => {
          inFlight--;
        });
    }
  }

  return {
    forward,
    stats,
    get enabled(): boolean {
      return endpoints.length > 0;
    },
  };
}

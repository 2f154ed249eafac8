/**
 * The cost alerts firing now (GET /api/alerts), as a banner above every page: which rule, which
 * group (session, model, user…) and how far over its threshold. Polled; hidden when none fire.
 */
import { useEffect, useState } from 'preact/hooks';
import { type FiringAlert, listFiringAlerts } from '../api.js';
import { routeHref } from '../router.js';

const POLL_MS = 3000;

const shown = (a: FiringAlert): string =>
  a.measure === 'usd' ? `$${a.value.toFixed(2)} / $${a.threshold}` : `${a.value} / ${a.threshold} tokens`;

export function AlertBanner() {
  const [firing, setFiring] = useState<FiringAlert[]>([]);
  useEffect(() => {
    let stopped = false;
    const poll = async (): Promise<void> => {
      const now = await listFiringAlerts().catch(() => undefined);
      if (!stopped && now) setFiring(now);
    };
    void poll();
    const timer = setInterval(() => void poll(), POLL_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, []);
  if (!firing.length) return null;
  return (
    <div class="error-box alert-banner" role="alert" data-testid="alert-banner">
      <strong>
        {firing.length} cost alert{firing.length === 1 ? '' : 's'} firing
      </strong>
      <ul>
        {firing.map((a) => (
          <li key={`${a.rule} ${a.group}`}>
            <span class="mono">{a.rule}</span>: {a.groupBy}{' '}
            {a.groupBy === 'session' ? (
              <a href={routeHref({ view: 'session', sessionId: a.group })}>{a.group}</a>
            ) : (
              <span class="mono">{a.group}</span>
            )}{' '}
            at {shown(a)} over {a.windowSeconds}s
          </li>
        ))}
      </ul>
    </div>
  );
}

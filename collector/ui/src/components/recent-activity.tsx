/**
 * What the collector holds when no runtime exports metrics (spans sent straight from an
 * instrumented app): the latest sessions and traces, so the first page is never empty while data
 * exists. With no spans at all it is the "send telemetry" guide.
 */
import { listSessions, listTraces } from '../api.js';
import { formatAgo, formatDuration } from '../format.js';
import { useAsync, useLiveSpans } from '../hooks.js';
import { routeHref } from '../router.js';
import { EmptyState, ErrorBox, Loading, StatusPill } from './common.js';

const SHOWN = 10;

async function loadRecent() {
  const [sessions, traces] = await Promise.all([listSessions(), listTraces({}, SHOWN)]);
  return { sessions: sessions.slice(0, SHOWN), traces };
}

export function RecentActivity() {
  const state = useAsync(loadRecent, []);
  useLiveSpans(() => state.reload(), 2000);
  if (state.error) return <ErrorBox error={state.error} retry={state.reload} />;
  if (!state.data) return <Loading what="recent sessions and traces" />;
  const { sessions, traces } = state.data;
  if (sessions.length === 0 && traces.length === 0) return <EmptyState title="No telemetry yet" />;
  return (
    <div class="recent" data-testid="recent-activity">
      <p class="muted">
        No agent runtime metrics in this range: the runtime exports them when an agent is invoked through it (
        <code>agentrt invoke</code>). Here is what the collector has received.
      </p>
      {sessions.length > 0 && (
        <>
          <h2>Latest sessions</h2>
          <table class="list" data-testid="recent-sessions">
            <tbody>
              {sessions.map((s) => (
                <tr key={s.sessionId}>
                  <td>
                    <a class="mono" href={routeHref({ view: 'session', sessionId: s.sessionId })}>
                      {s.sessionId}
                    </a>
                  </td>
                  <td>{s.services.join(', ')}</td>
                  <td class="num">{s.traceCount} traces</td>
                  <td>
                    <StatusPill errors={s.errorCount} />
                  </td>
                  <td>{formatAgo(s.lastSeenMs)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <h2>Latest traces</h2>
      <table class="list" data-testid="recent-traces">
        <tbody>
          {traces.map((t) => (
            <tr key={t.traceId}>
              <td>
                <a href={routeHref({ view: 'trace', traceId: t.traceId })}>{t.rootName}</a>
              </td>
              <td>{t.service}</td>
              <td class="num">{formatDuration(t.durationMs)}</td>
              <td>
                <StatusPill errors={t.errorCount} />
              </td>
              <td>{formatAgo(t.startMs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Sessions: every session.id, and one session read as a conversation. */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { getSession, getTrace, listSessions, runQuery } from '../api.js';
import { SESSION_SCORES_QUERY, toSessionScores } from '../evals.js';
import { Score } from './evals.js';
import { Cost, ErrorBox, EmptyState, Loading, StatusPill, Tokens } from '../components/common.js';
import { conversationTurn, type ConversationTurn } from '../conversation.js';
import { formatAgo, formatDateTime, formatDuration, shortId } from '../format.js';
import { navigate, useAsync, useListNav, useLiveSpans, usePrices } from '../hooks.js';
import { routeHref } from '../router.js';
import type { Price } from '../../../src/cost/prices.js';
import type { TraceSummaryView } from '../view-types.js';

/** The mean evaluation score of each scored session (empty when nothing was evaluated). */
const loadScores = async (): Promise<Map<string, number>> =>
  toSessionScores((await runQuery(SESSION_SCORES_QUERY)).rows);

export function SessionsView() {
  const state = useAsync(listSessions, []);
  const scores = useAsync(loadScores, []);
  const [below, setBelow] = useState<number | undefined>(undefined);
  const prices = usePrices();
  useLiveSpans(() => state.reload(), 1000);
  const byScore = (id: string): boolean => below === undefined || (scores.data?.get(id) ?? Infinity) < below;
  const sessions = (state.data ?? []).filter((s) => byScore(s.sessionId));
  const open = (i: number): void => {
    const s = sessions[i];
    if (s) navigate(routeHref({ view: 'session', sessionId: s.sessionId }));
  };
  const [cursor] = useListNav(sessions.length, open);
  if (state.error) return <ErrorBox error={state.error} retry={state.reload} />;
  if (!state.data) return <Loading what="sessions" />;
  if (state.data.length === 0)
    return (
      <EmptyState title="No sessions yet">
        <p>
          A session groups the traces of one conversation by their <code>session.id</code> (or{' '}
          <code>gen_ai.conversation.id</code>) attribute.
        </p>
      </EmptyState>
    );
  return (
    <section>
      <h1>
        Sessions <span class="count">{sessions.length}</span>
      </h1>
      <label class="filter" data-testid="score-filter">
        score below{' '}
        <input
          type="number"
          min="0"
          max="1"
          step="0.05"
          value={below ?? ''}
          onInput={(e) => {
            const v = (e.target as HTMLInputElement).value;
            setBelow(v === '' ? undefined : Number(v));
          }}
        />
      </label>
      <table class="list" data-testid="sessions-table">
        <thead>
          <tr>
            <th>session</th>
            <th>agent / service</th>
            <th class="num">traces</th>
            <th class="num">spans</th>
            <th class="num">duration</th>
            <th>status</th>
            <th class="num">tokens</th>
            <th class="num">cost</th>
            <th class="num">score</th>
            <th>last activity</th>
          </tr>
        </thead>
        <tbody>
          {sessions.map((s, i) => (
            <tr
              key={s.sessionId}
              class={i === cursor ? 'cursor' : ''}
              data-row-index={i}
              onClick={() => open(i)}
            >
              <td>
                <a href={routeHref({ view: 'session', sessionId: s.sessionId })} class="mono">
                  {s.sessionId}
                </a>
              </td>
              <td data-testid="session-agents">{s.services.join(', ')}</td>
              <td class="num">{s.traceCount}</td>
              <td class="num">{s.spanCount}</td>
              <td class="num">{formatDuration(s.durationMs)}</td>
              <td>
                <StatusPill errors={s.errorCount} />
              </td>
              <td class="num">
                <Tokens tokens={s.tokens} />
              </td>
              <td class="num">
                <Cost byModel={s.tokensByModel} prices={prices} />
              </td>
              <td class="num" data-testid="session-score">
                <Score score={scores.data?.get(s.sessionId)} />
              </td>
              <td title={formatDateTime(s.lastSeenMs)}>{formatAgo(s.lastSeenMs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <KeyHint />
    </section>
  );
}

export function KeyHint() {
  return (
    <p class="hint">
      <kbd>j</kbd>/<kbd>k</kbd> or <kbd>↓</kbd>/<kbd>↑</kbd> to move, <kbd>Enter</kbd> to open
    </p>
  );
}

const MAX_TURNS = 50;

async function loadSession(id: string) {
  const { session, traces } = await getSession(id);
  const ordered = [...traces].sort((a, b) => a.startMs - b.startMs);
  // The newest turns matter most; older ones still list without their text.
  const withText = ordered.slice(-MAX_TURNS);
  const turns = await Promise.all(
    withText.map((t) =>
      getTrace(t.traceId).then(
        (trace) => conversationTurn(trace),
        () => undefined, // A trace that fails to load still shows its summary row.
      ),
    ),
  );
  const byId = new Map(withText.map((t, i) => [t.traceId, turns[i]]));
  return { session, turns: ordered.map((t) => ({ summary: t, turn: byId.get(t.traceId) })) };
}

export function SessionView({ sessionId }: { sessionId: string }) {
  const state = useAsync(() => loadSession(sessionId), [sessionId]);
  const prices = usePrices();
  useLiveSpans((spans) => {
    if (
      spans.some(
        (s) =>
          s.attributes['session.id'] === sessionId || s.attributes['gen_ai.conversation.id'] === sessionId,
      )
    )
      state.reload();
  }, 1000);
  if (state.error) return <ErrorBox error={state.error} retry={state.reload} />;
  if (!state.data) return <Loading what="session" />;
  const { session, turns } = state.data;
  return (
    <section>
      <nav class="crumbs">
        <a href={routeHref({ view: 'sessions' })}>Sessions</a> / <span class="mono">{session.sessionId}</span>{' '}
        ·{' '}
        <a data-testid="session-logs" href={routeHref({ view: 'logs', sessionId: session.sessionId })}>
          logs
        </a>
      </nav>
      <div class="summary-cards">
        <Card label="traces" value={session.traceCount} />
        <Card label="spans" value={session.spanCount} />
        <Card label="duration" value={formatDuration(session.durationMs)} />
        <Card label="errors" value={session.errorCount} tone={session.errorCount > 0 ? 'bad' : undefined} />
        <Card label="tokens in / out" value={<Tokens tokens={session.tokens} />} />
        <Card label="cost" value={<Cost byModel={session.tokensByModel} prices={prices} />} />
        <Card label="agents" value={session.services.join(', ')} />
      </div>
      <ol class="conversation" data-testid="conversation">
        {turns.map(({ summary, turn }, i) => (
          <Turn key={summary.traceId} index={i + 1} summary={summary} turn={turn} prices={prices} />
        ))}
      </ol>
    </section>
  );
}

function Turn({
  index,
  summary,
  turn,
  prices,
}: {
  index: number;
  summary: TraceSummaryView;
  turn?: ConversationTurn;
  prices: Record<string, Price> | undefined;
}) {
  return (
    <li class="turn">
      <div class="turn-meta">
        <a href={routeHref({ view: 'trace', traceId: summary.traceId })} class="mono">
          #{index} · {shortId(summary.traceId)}
        </a>
        <span class="muted">{formatDateTime(summary.startMs)}</span>
        <span>{formatDuration(summary.durationMs)}</span>
        <Tokens tokens={summary.tokens} />
        <Cost byModel={summary.tokensByModel} prices={prices} />
        <StatusPill errors={summary.errorCount} inProgress={summary.inProgress} />
      </div>
      {turn?.prompt && (
        <div class="bubble user">
          <span class="who">user</span>
          {turn.prompt}
        </div>
      )}
      {turn && (turn.tools.length > 0 || turn.models.length > 0) && (
        <div class="turn-steps muted">
          {turn.models.length > 0 && <span>model {turn.models.join(', ')}</span>}
          {turn.tools.map((t) => (
            <span key={t} class="badge kind-execute_tool as-is">
              {t}
            </span>
          ))}
        </div>
      )}
      {turn?.answer && (
        <div class="bubble assistant">
          <span class="who">agent</span>
          {turn.answer}
        </div>
      )}
      {!turn?.prompt && !turn?.answer && (
        <div class="muted">{summary.rootName} — no message content recorded</div>
      )}
    </li>
  );
}

export function Card({ label, value, tone }: { label: string; value: ComponentChildren; tone?: 'bad' }) {
  return (
    <div class={`card ${tone ?? ''}`}>
      <div class="card-value">{value}</div>
      <div class="card-label">{label}</div>
    </div>
  );
}

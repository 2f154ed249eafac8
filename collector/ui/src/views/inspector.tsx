/**
 * Inspector: talk to an agent while building it. Pick a runtime of a runtime host, chat with it
 * over several sessions (kept in this browser across reloads), read answers as they stream, and
 * watch each turn's spans (model and tool calls, tokens, cost) arrive beside the chat. Every
 * request is the page's own call to the runtime's data plane (inspector-client.ts).
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, getTrace } from '../api.js';
import { Cost, EmptyState, ErrorBox, KindBadge, Loading, Tokens } from '../components/common.js';
import { formatDuration } from '../format.js';
import { navigate, useAsync, useLiveSpans, usePrices } from '../hooks.js';
import {
  DEFAULT_RUNTIME_HOST,
  type RuntimeInfo,
  invokeStreaming,
  listRuntimes,
} from '../inspector-client.js';
import {
  type ChatMessage,
  type InspectorSession,
  type RuntimeSessions,
  loadSessions,
  newSession,
  newTraceparent,
  saveSessions,
  sessionsKey,
} from '../inspector-model.js';
import { routeHref } from '../router.js';
import type { TraceView } from '../view-types.js';

const HOST_KEY = 'agentrt.inspector.host';

function storedHost(): string {
  try {
    return localStorage.getItem(HOST_KEY) || DEFAULT_RUNTIME_HOST;
  } catch {
    return DEFAULT_RUNTIME_HOST;
  }
}

export function InspectorView({ host: routeHost, runtime }: { host?: string; runtime?: string }) {
  const host = (routeHost || storedHost()).replace(/\/+$/, '');
  const [draftHost, setDraftHost] = useState(host);
  const runtimes = useAsync(() => listRuntimes(host), [host]);
  const go = (next: { host?: string; runtime?: string }): void =>
    navigate(routeHref({ view: 'inspector', host: next.host ?? host, runtime: next.runtime }));
  const chosen = runtimes.data?.find((r) => r.arn === runtime || r.name === runtime) ?? runtimes.data?.[0];
  return (
    <section class="inspector">
      <h1>Inspector</h1>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          try {
            localStorage.setItem(HOST_KEY, draftHost);
          } catch {
            // Storage disabled: the host is in the URL still.
          }
          go({ host: draftHost.replace(/\/+$/, '') });
        }}
      >
        <label>
          runtime host{' '}
          <input
            type="url"
            value={draftHost}
            data-testid="runtime-host"
            onInput={(e) => setDraftHost((e.target as HTMLInputElement).value)}
          />
        </label>
        <button class="btn" type="submit">
          Connect
        </button>
        {runtimes.data && runtimes.data.length > 0 && (
          <select
            data-testid="runtime-select"
            value={chosen?.arn}
            onChange={(e) => go({ runtime: (e.target as HTMLSelectElement).value })}
          >
            {runtimes.data.map((r) => (
              <option key={r.arn} value={r.arn}>
                {r.name} ({r.protocol}, {r.status})
              </option>
            ))}
          </select>
        )}
      </form>
      {runtimes.error && <ErrorBox error={runtimes.error} retry={runtimes.reload} />}
      {!runtimes.data && !runtimes.error && <Loading what="runtimes" />}
      {runtimes.data?.length === 0 && (
        <EmptyState title="No agent runtimes on this host">
          <p>
            Create one (<code>agentrt runtime create</code>) or start the dev stack (<code>agentrt dev</code>
            ).
          </p>
        </EmptyState>
      )}
      {chosen && <ChatPanel key={`${host} ${chosen.arn}`} host={host} runtime={chosen} />}
    </section>
  );
}

function useRuntimeSessions(host: string, arn: string) {
  const key = sessionsKey(host, arn);
  const [state, setState] = useState<RuntimeSessions>(() => {
    const loaded = loadSessions(localStorage, key);
    if (loaded.sessions.length) return loaded;
    const first = newSession([]);
    return { sessions: [first], activeId: first.id };
  });
  useEffect(() => saveSessions(localStorage, key, state), [key, state]);
  const active = state.sessions.find((s) => s.id === state.activeId) ?? state.sessions[0]!;
  const update = (id: string, change: (s: InspectorSession) => InspectorSession): void =>
    setState((prev) => ({ ...prev, sessions: prev.sessions.map((s) => (s.id === id ? change(s) : s)) }));
  return {
    sessions: state.sessions,
    active,
    select: (id: string) => setState((prev) => ({ ...prev, activeId: id })),
    create: () =>
      setState((prev) => {
        const s = newSession(prev.sessions);
        return { sessions: [...prev.sessions, s], activeId: s.id };
      }),
    rename: (id: string, name: string) => update(id, (s) => ({ ...s, name })),
    append: (id: string, message: ChatMessage) =>
      update(id, (s) => ({ ...s, messages: [...s.messages, message] })),
    /** Adds text to the session's last message (the answer streaming in). */
    extend: (id: string, text: string) =>
      update(id, (s) => {
        const last = s.messages.at(-1)!;
        return { ...s, messages: [...s.messages.slice(0, -1), { ...last, text: last.text + text }] };
      }),
  };
}

function ChatPanel({ host, runtime }: { host: string; runtime: RuntimeInfo }) {
  const store = useRuntimeSessions(host, runtime.arn);
  const [input, setInput] = useState('');
  const [busy, setBusy] = useState(false);
  const [renaming, setRenaming] = useState<string | undefined>();
  const session = store.active;
  const shownTrace = [...session.messages].reverse().find((m) => m.traceId)?.traceId;
  const send = async (): Promise<void> => {
    const text = input.trim();
    if (!text || busy) return;
    const { traceId, header } = newTraceparent();
    const id = session.id;
    setInput('');
    setBusy(true);
    store.append(id, { role: 'user', text, atMs: Date.now() });
    store.append(id, { role: 'agent', text: '', traceId, atMs: Date.now() });
    try {
      await invokeStreaming({
        host,
        arn: runtime.arn,
        sessionId: id,
        payload: JSON.stringify({ prompt: text, stream: true }),
        traceparent: header,
        onText: (delta) => store.extend(id, delta),
      });
    } catch (error) {
      store.append(id, { role: 'error', text: (error as Error).message, traceId, atMs: Date.now() });
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="inspector-grid">
      <aside class="inspector-sessions" data-testid="inspector-sessions">
        <button class="btn primary" type="button" data-testid="new-session" onClick={store.create}>
          New session
        </button>
        <ul>
          {store.sessions.map((s) => (
            <li key={s.id} class={s.id === session.id ? 'active' : ''}>
              {renaming === s.id ? (
                <input
                  data-testid="rename-input"
                  value={s.name}
                  ref={(el) => el?.focus()}
                  onInput={(e) => store.rename(s.id, (e.target as HTMLInputElement).value)}
                  onBlur={() => setRenaming(undefined)}
                  onKeyDown={(e) => e.key === 'Enter' && setRenaming(undefined)}
                />
              ) : (
                <button
                  type="button"
                  class="link"
                  data-testid="session-tab"
                  title={s.id}
                  onClick={() => store.select(s.id)}
                  onDblClick={() => setRenaming(s.id)}
                >
                  {s.name}
                </button>
              )}
            </li>
          ))}
        </ul>
        <button
          class="btn"
          type="button"
          data-testid="rename-session"
          onClick={() => setRenaming(session.id)}
        >
          Rename
        </button>
        <p class="muted mono" data-testid="session-id">
          {session.id}
        </p>
      </aside>
      <div class="inspector-chat">
        <ol class="chat-log" data-testid="chat-log">
          {session.messages.map((m, i) => (
            <li key={i} class={`chat-msg ${m.role}`} data-testid={`msg-${m.role}`}>
              {m.text || (busy && i === session.messages.length - 1 ? '…' : '')}
            </li>
          ))}
        </ol>
        <form
          class="chat-input"
          onSubmit={(e) => {
            e.preventDefault();
            void send();
          }}
        >
          <textarea
            data-testid="chat-input"
            value={input}
            placeholder={`Message ${runtime.name}`}
            onInput={(e) => setInput((e.target as HTMLTextAreaElement).value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey) {
                e.preventDefault();
                void send();
              }
            }}
          />
          <button class="btn primary" type="submit" data-testid="chat-send" disabled={busy}>
            Send
          </button>
        </form>
      </div>
      <aside class="inspector-spans">
        {shownTrace && <TurnSpans key={shownTrace} traceId={shownTrace} />}
      </aside>
    </div>
  );
}

/** The spans of one turn's trace, refreshed as the live feed brings more of them. */
function TurnSpans({ traceId }: { traceId: string }) {
  const [trace, setTrace] = useState<TraceView | undefined>();
  const [error, setError] = useState<Error | undefined>();
  const prices = usePrices();
  const loading = useRef(false);
  const load = useMemo(
    () => async () => {
      if (loading.current) return;
      loading.current = true;
      try {
        setTrace(await getTrace(traceId));
        setError(undefined);
      } catch (e) {
        // The trace's first spans have not arrived yet: the live feed brings them.
        if (!(e instanceof ApiError && e.status === 404)) setError(e as Error);
      } finally {
        loading.current = false;
      }
    },
    [traceId],
  );
  useEffect(() => void load(), [load]);
  useLiveSpans((spans) => {
    if (spans.some((s) => s.traceId === traceId)) void load();
  }, 300);
  if (error) return <ErrorBox error={error} />;
  if (!trace) return <p class="muted">waiting for the turn's spans…</p>;
  return (
    <div data-testid="turn-spans">
      <h2>
        This turn <Tokens tokens={trace.summary.tokens} />{' '}
        <Cost byModel={trace.summary.tokensByModel} prices={prices} />
      </h2>
      <ul class="turn-spans">
        {trace.spans.map((s) => (
          <li key={s.spanId} data-testid="turn-span" class={s.status === 'error' ? 'error' : ''}>
            <KindBadge kind={s.genai.kind} /> {s.name}{' '}
            <span class="muted">{formatDuration(s.durationMs)}</span>
          </li>
        ))}
      </ul>
      <a href={routeHref({ view: 'trace', traceId })} data-testid="full-trace">
        Open the full trace
      </a>
    </div>
  );
}

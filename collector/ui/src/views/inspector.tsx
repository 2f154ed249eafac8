/**
 * Inspector: talk to an agent while building it. Pick a runtime of a runtime host, chat with it
 * over several sessions (kept in this browser across reloads), read answers as they stream, and
 * watch each turn's spans (model and tool calls, tokens, cost) arrive beside the chat. Every
 * request is the page's own call to the runtime's data plane (inspector-client.ts).
 */
import { useEffect, useState } from 'preact/hooks';
import { EmptyState, ErrorBox, Loading } from '../components/common.js';
import { BuildStatus } from '../components/build-status.js';
import { Composer } from '../components/composer.js';
import { TurnSpans } from '../components/turn-spans.js';
import { navigate, useAsync } from '../hooks.js';
import { type StoredAuth, loadAuth, saveAuth } from '../inspector-auth.js';
import {
  DEFAULT_RUNTIME_HOST,
  type RuntimeAuth,
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
import { streamAguiRun } from '../inspector-protocols.js';
import { A2aPanel, McpPanel } from './inspector-protocols.js';

const HOST_KEY = 'agentrt.inspector.host';

const stores = () => ({ session: sessionStorage, local: localStorage });

/** The host's credentials (inspector-auth.ts), and a setter that keeps them as asked. */
function useHostAuth(host: string): [StoredAuth, (auth: StoredAuth) => void] {
  const [auth, setAuth] = useState<StoredAuth>(() => loadAuth(stores(), host));
  useEffect(() => setAuth(loadAuth(stores(), host)), [host]);
  return [
    auth,
    (next) => {
      saveAuth(stores(), host, next);
      setAuth(next);
    },
  ];
}

function SecretField(props: {
  label: string;
  testId: string;
  value: string | undefined;
  onInput: (value: string) => void;
}) {
  return (
    <label>
      {props.label}{' '}
      <input
        type="password"
        autocomplete="off"
        data-testid={props.testId}
        value={props.value ?? ''}
        onInput={(e) => props.onInput((e.target as HTMLInputElement).value)}
      />
    </label>
  );
}

/**
 * The credentials box: a bearer token (runtimes with a JWT authorizer) and an API key (a host with
 * AGENTRT_API_KEYS), sent on every call to this host only.
 */
function CredentialsForm({ auth, onSave }: { auth: StoredAuth; onSave: (auth: StoredAuth) => void }) {
  const [draft, setDraft] = useState(auth);
  useEffect(() => setDraft(auth), [auth]);
  const set = (change: Partial<StoredAuth>): void => setDraft((d) => ({ ...d, ...change }));
  const has = Boolean(auth.bearer || auth.apiKey);
  return (
    <details class="inspector-auth" data-testid="credentials" open={has || undefined}>
      <summary>Credentials{has ? ' (set)' : ''}</summary>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          onSave(draft);
        }}
      >
        <SecretField
          label="bearer token"
          testId="auth-bearer"
          value={draft.bearer}
          onInput={(bearer) => set({ bearer })}
        />
        <SecretField
          label="API key"
          testId="auth-api-key"
          value={draft.apiKey}
          onInput={(apiKey) => set({ apiKey })}
        />
        <label title="Kept in clear in this browser's localStorage, where any page of this origin can read it.">
          <input
            type="checkbox"
            data-testid="auth-remember"
            checked={draft.remember}
            onChange={(e) => set({ remember: (e.target as HTMLInputElement).checked })}
          />{' '}
          remember on this device
        </label>
        <button class="btn" type="submit" data-testid="auth-save">
          Use
        </button>
        <span class="muted small">
          Sent as <code>Authorization: Bearer …</code> and <code>x-api-key</code> to this host only; kept for
          this tab unless remembered (then in clear in localStorage).
        </span>
      </form>
    </details>
  );
}

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
  const [auth, setAuth] = useHostAuth(host);
  const runtimes = useAsync(() => listRuntimes(host, auth), [host, auth]);
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
      <CredentialsForm auth={auth} onSave={setAuth} />
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
      {chosen && <RuntimePanel key={`${host} ${chosen.arn}`} host={host} runtime={chosen} auth={auth} />}
    </section>
  );
}

/** The runtime's own panel: tools for MCP, the card and tasks for A2A, a chat for the others. */
function RuntimePanel({ host, runtime, auth }: { host: string; runtime: RuntimeInfo; auth: RuntimeAuth }) {
  const Panel = runtime.protocol === 'MCP' ? McpPanel : runtime.protocol === 'A2A' ? A2aPanel : ChatPanel;
  return (
    <>
      <BuildStatus runtimeName={runtime.name} />
      <Panel host={host} runtime={runtime} auth={auth} />
    </>
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

function ChatPanel({ host, runtime, auth }: { host: string; runtime: RuntimeInfo; auth: RuntimeAuth }) {
  const store = useRuntimeSessions(host, runtime.arn);
  const [busy, setBusy] = useState(false);
  const [renaming, setRenaming] = useState<string | undefined>();
  const session = store.active;
  const shownTrace = [...session.messages].reverse().find((m) => m.traceId)?.traceId;
  const send = async (text: string): Promise<void> => {
    const { traceId, header } = newTraceparent();
    const id = session.id;
    setBusy(true);
    store.append(id, { role: 'user', text, atMs: Date.now() });
    store.append(id, { role: 'agent', text: '', traceId, atMs: Date.now() });
    const onText = (delta: string): void => store.extend(id, delta);
    try {
      if (runtime.protocol === 'AGUI') {
        // The thread so far, then this message: AG-UI agents get the conversation in each run.
        const turns = session.messages
          .filter((m) => m.role !== 'error' && m.text)
          .map((m) => ({
            role: m.role === 'user' ? ('user' as const) : ('assistant' as const),
            content: m.text,
          }));
        await streamAguiRun(
          { host, arn: runtime.arn, sessionId: id, auth },
          [...turns, { role: 'user', content: text }],
          header,
          onText,
        );
      } else
        await invokeStreaming({
          host,
          arn: runtime.arn,
          sessionId: id,
          payload: JSON.stringify({ prompt: text, stream: true }),
          traceparent: header,
          auth,
          onText,
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
        <Composer
          send={(text) => void send(text)}
          busy={busy}
          placeholder={`Message ${runtime.name}`}
          testId="chat-input"
        />
      </div>
      <aside class="inspector-spans">
        {shownTrace && <TurnSpans key={shownTrace} traceId={shownTrace} />}
      </aside>
    </div>
  );
}

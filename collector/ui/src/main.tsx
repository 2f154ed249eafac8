/** The trace explorer's entry: header, navigation, theme, live feed, routes. */
import './styles.css';
import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { AlertBanner } from './components/alert-banner.js';
import { LiveContext, useRoute } from './hooks.js';
import { createLiveFeed, type LiveStatus } from './live.js';
import { routeHref, type Route } from './router.js';
import { AgentsView } from './views/agents.js';
import { CompareView } from './views/compare.js';
import { EvalCompareView, EvalRunView, EvalsView } from './views/evals.js';
import { LogsView } from './views/logs.js';
import { InspectorView } from './views/inspector.js';
import { LiveView } from './views/live.js';
import { SearchView } from './views/search.js';
import { SessionView, SessionsView } from './views/sessions.js';
import { TraceDetailView } from './views/trace-detail.js';
import { TracesView } from './views/traces.js';

type Theme = 'light' | 'dark';

function initialTheme(): Theme {
  const set = document.documentElement.dataset.theme;
  if (set === 'dark' || set === 'light') return set;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(initialTheme);
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);
  const next: Theme = theme === 'dark' ? 'light' : 'dark';
  return (
    <button
      class="btn icon"
      aria-label={`switch to ${next} theme`}
      title={`Switch to ${next} theme`}
      data-testid="theme-toggle"
      onClick={() => {
        setTheme(next);
        try {
          localStorage.setItem('agentrt.theme', next);
        } catch {
          // Storage can be disabled (private mode): the choice then lasts for this page only.
        }
      }}
    >
      {theme === 'dark' ? '☀' : '☾'}
    </button>
  );
}

const NAV: { label: string; route: Route; match: Route['view'][] }[] = [
  { label: 'Agents', route: { view: 'agents' }, match: ['agents'] },
  { label: 'Sessions', route: { view: 'sessions' }, match: ['sessions', 'session'] },
  { label: 'Traces', route: { view: 'traces', filters: {} }, match: ['traces', 'trace'] },
  { label: 'Search', route: { view: 'search' }, match: ['search'] },
  { label: 'Compare', route: { view: 'compare' }, match: ['compare'] },
  { label: 'Evals', route: { view: 'evals' }, match: ['evals', 'eval-run', 'eval-compare'] },
  { label: 'Live', route: { view: 'live' }, match: ['live'] },
  { label: 'Logs', route: { view: 'logs' }, match: ['logs'] },
  { label: 'Inspector', route: { view: 'inspector' }, match: ['inspector'] },
];

function Page({ route }: { route: Route }) {
  switch (route.view) {
    case 'agents':
      return <AgentsView />;
    case 'logs': {
      const { view: _view, ...initial } = route;
      return <LogsView key={JSON.stringify(initial)} initial={initial} />;
    }
    case 'sessions':
      return <SessionsView />;
    case 'session':
      return <SessionView key={route.sessionId} sessionId={route.sessionId} />;
    case 'traces':
      return <TracesView filters={route.filters} />;
    case 'trace':
      return <TraceDetailView key={route.traceId} {...route} />;
    case 'search':
      return <SearchView query={route.query} />;
    case 'compare':
      return <CompareView a={route.a} b={route.b} />;
    case 'live':
      return <LiveView />;
    case 'inspector':
      return <InspectorView host={route.host} runtime={route.runtime} />;
    case 'evals':
      return <EvalsView />;
    case 'eval-run':
      return <EvalRunView key={route.runId} runId={route.runId} />;
    case 'eval-compare':
      return <EvalCompareView key={`${route.base} ${route.run}`} base={route.base} run={route.run} />;
  }
}

function App() {
  const route = useRoute();
  const feed = useMemo(() => createLiveFeed(), []);
  const [status, setStatus] = useState<LiveStatus>(feed.status());
  useEffect(() => {
    const unsubscribe = feed.onStatus(setStatus);
    // The stream may have opened between the first render and this (deferred) effect.
    setStatus(feed.status());
    return unsubscribe;
  }, [feed]);
  useEffect(() => {
    // "/" focuses the page's search or filter box, like most list UIs.
    const onKey = (e: KeyboardEvent): void => {
      const t = e.target as HTMLElement;
      if (e.key !== '/' || t.tagName === 'INPUT' || t.tagName === 'TEXTAREA') return;
      const box = document.querySelector<HTMLElement>('.query-input, .filters input[type=search]');
      if (box) {
        e.preventDefault();
        box.focus();
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);
  return (
    <LiveContext.Provider value={feed}>
      <header class="topbar">
        <a class="brand" href="#/agents">
          <svg viewBox="0 0 16 16" width="18" height="18" aria-hidden="true">
            <rect x="1" y="3" width="9" height="3" rx="1" fill="var(--c1)" />
            <rect x="5" y="7" width="10" height="3" rx="1" fill="var(--c2)" />
            <rect x="3" y="11" width="6" height="3" rx="1" fill="var(--c3)" />
          </svg>
          agentrt <span class="muted">trace explorer</span>
        </a>
        <nav class="tabs">
          {NAV.map((n) => (
            <a key={n.label} href={routeHref(n.route)} class={n.match.includes(route.view) ? 'active' : ''}>
              {n.label}
            </a>
          ))}
        </nav>
        <span class={`live-status ${status}`} data-testid="live-status" title={`live updates: ${status}`}>
          <span class="dot" />{' '}
          {status === 'open' ? 'live' : status === 'connecting' ? 'connecting…' : 'offline'}
        </span>
        <ThemeToggle />
      </header>
      <main class="page">
        <AlertBanner />
        <Page route={route} />
      </main>
    </LiveContext.Provider>
  );
}

render(<App />, document.getElementById('app')!);

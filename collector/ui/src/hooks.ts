/** Small Preact hooks shared by the views. */
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { getPrices } from './api.js';
import type { Price } from '../../src/cost/prices.js';
import type { LiveFeed } from './live.js';
import { parseRoute, type Route } from './router.js';
import type { SpanView } from './view-types.js';

export interface AsyncState<T> {
  data?: T;
  error?: Error;
  loading: boolean;
  reload: () => void;
}

/**
 * Runs `load` when `deps` change; `reload()` refetches quietly (keeps showing the old data, so live
 * refreshes do not flash a spinner).
 */
export function useAsync<T>(load: () => Promise<T>, deps: unknown[]): AsyncState<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  const run = useCallback((quiet: boolean) => {
    const mine = ++generation.current;
    if (!quiet) setState((s) => ({ ...s, loading: true, error: undefined }));
    load().then(
      (data) => mine === generation.current && setState({ data, loading: false }),
      (error: unknown) =>
        mine === generation.current &&
        setState((s) => ({
          ...s,
          error: error instanceof Error ? error : new Error(String(error)),
          loading: false,
        })),
    );
  }, deps);
  useEffect(() => run(false), [run]);
  const reload = useCallback(() => run(true), [run]);
  return { ...state, reload };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = (): void => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

export function navigate(hash: string): void {
  if (location.hash !== hash) location.hash = hash;
}

export const LiveContext = createContext<LiveFeed | undefined>(undefined);

/** Calls `onSpans` with arriving spans, at most once per `throttleMs`. */
export function useLiveSpans(onSpans: (spans: SpanView[]) => void, throttleMs = 0): void {
  const feed = useContext(LiveContext);
  const callback = useRef(onSpans);
  callback.current = onSpans;
  useEffect(() => {
    if (!feed) return undefined;
    let pending: SpanView[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const flush = (): void => {
      timer = undefined;
      const batch = pending;
      pending = [];
      callback.current(batch);
    };
    const unsubscribe = feed.subscribe((spans) => {
      pending = pending.concat(spans);
      if (throttleMs <= 0) flush();
      else timer ??= setTimeout(flush, throttleMs);
    });
    return () => {
      unsubscribe();
      if (timer) clearTimeout(timer);
    };
  }, [feed, throttleMs]);
}

function typingInField(e: KeyboardEvent): boolean {
  const t = e.target as HTMLElement | null;
  return (
    !!t &&
    (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable)
  );
}

/**
 * Keyboard navigation in a list: j/k or ↓/↑ move, Enter opens, Home/End jump. Keys typed in form
 * fields are left alone.
 */
export function useListNav(
  count: number,
  onOpen: (index: number) => void,
  extra?: (e: KeyboardEvent, index: number) => boolean,
) {
  const [index, setIndex] = useState(0);
  const open = useRef(onOpen);
  open.current = onOpen;
  const more = useRef(extra);
  more.current = extra;
  useEffect(() => {
    if (index >= count && count > 0) setIndex(count - 1);
  }, [count, index]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent): void => {
      if (typingInField(e) || e.ctrlKey || e.metaKey || e.altKey || count === 0) return;
      if (more.current?.(e, index)) {
        e.preventDefault();
        return;
      }
      let next: number;
      if (e.key === 'j' || e.key === 'ArrowDown') next = Math.min(count - 1, index + 1);
      else if (e.key === 'k' || e.key === 'ArrowUp') next = Math.max(0, index - 1);
      else if (e.key === 'Home') next = 0;
      else if (e.key === 'End') next = count - 1;
      else if (e.key === 'Enter') {
        e.preventDefault();
        open.current(index);
        return;
      } else return;
      e.preventDefault();
      setIndex(next);
      document.querySelector(`[data-row-index="${next}"]`)?.scrollIntoView({ block: 'nearest' });
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [count, index]);
  return [index, setIndex] as const;
}

let pricesOnce: Promise<Record<string, Price>> | undefined;

/**
 * The collector's model price table (GET /api/prices, fetched once per page load); undefined until
 * it arrived. A failed fetch is retried on the next mount.
 */
export function usePrices(): Record<string, Price> | undefined {
  const [prices, setPrices] = useState<Record<string, Price> | undefined>();
  useEffect(() => {
    let live = true;
    pricesOnce ??= getPrices();
    pricesOnce.then(
      (p) => live && setPrices(p),
      () => {
        pricesOnce = undefined; // Shown as "—" (no price); the next view asks again.
      },
    );
    return () => {
      live = false;
    };
  }, []);
  return prices;
}

// Evaluates the cost alert rules on ingest: each committed model call (`chat` span) adds its tokens
// or USD cost to its group's rolling window; a group whose sum reaches the threshold fires — its
// webhook gets the firing at once (not waiting on anything else) — and fires once per window: it
// resolves (webhook again) when the window's sum falls back under the threshold, and may fire again
// only once a window has passed since it fired. The windows are kept in memory and saved in the
// store (alert-state.ts), so a restart neither fires again in a window nor forgets to resolve.
import { type Price, costOfUsage } from '../cost/prices.js';
import { classifySpan, sessionIdOf } from '../trace-model/genai.js';
import { spanTokenUsage, usageModel } from '../trace-model/tokens.js';
import type { SpanRecord } from '../wire-types.js';
import type { AlertWindow, AlertWindowChange, AlertWindows } from './alert-window.js';
import type { AlertRule } from './rules.js';

export interface AlertEvent {
  rule: string;
  status: 'firing' | 'resolved' | 'test';
  measure: AlertRule['measure'];
  group: string;
  groupBy: string;
  value: number;
  threshold: number;
  windowSeconds: number;
  /** ISO time of the crossing (or resolution). */
  at: string;
  /** The span whose usage crossed the threshold. */
  traceId?: string;
  spanId?: string;
  /** The webhook's answer: its status, or why it could not be reached. */
  delivery?: string;
}

export interface AlertEngineOptions {
  prices: Readonly<Record<string, Price>>;
  now?: () => number;
  /** How the webhook is called (tests may watch); default fetch with a 5 s deadline. */
  post?: (url: string, body: string) => Promise<number>;
}

type Group = AlertWindow;

const MAX_GROUPS_PER_RULE = 10_000;
const RECENT = 100;

const defaultPost = async (url: string, body: string): Promise<number> =>
  (
    await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(5000),
    })
  ).status;

function groupOf(rule: AlertRule, span: SpanRecord): string | undefined {
  if (rule.groupBy === 'session') return sessionIdOf(span.attributes, span.resource.attributes);
  if (rule.groupBy === 'model') return usageModel(span.attributes) || undefined;
  const v = span.attributes[rule.groupBy] ?? span.resource.attributes[rule.groupBy];
  return v === undefined || v === null ? undefined : String(v);
}

function matches(rule: AlertRule, span: SpanRecord): boolean {
  return Object.entries(rule.where).every(
    ([key, value]) => String(span.attributes[key] ?? span.resource.attributes[key] ?? '') === value,
  );
}

/** The engine's state: its rules, each rule's groups, the last events and the groups not yet saved. */
interface EngineState {
  prices: Readonly<Record<string, Price>>;
  now: () => number;
  post: (url: string, body: string) => Promise<number>;
  rules: AlertRule[];
  groups: Map<string, Map<string, Group>>;
  recent: AlertEvent[];
  /** The groups whose windows changed since they were last taken (rule → group names). */
  changed: Map<string, Set<string>>;
}

/** Marks a group's window as changed: the next takeChanges hands it over to be saved. */
function touch(state: EngineState, rule: string, name: string): void {
  let names = state.changed.get(rule);
  if (!names) state.changed.set(rule, (names = new Set()));
  names.add(name);
}

function amountOf(state: EngineState, rule: AlertRule, span: SpanRecord): number {
  const usage = spanTokenUsage(span.attributes);
  if (!usage) return 0;
  if (rule.measure === 'tokens') return usage.total;
  return costOfUsage({ [usageModel(span.attributes)]: usage }, state.prices)?.usd ?? 0;
}

function deliver(state: EngineState, rule: AlertRule, event: AlertEvent): void {
  state.recent.unshift(event);
  state.recent.length = Math.min(state.recent.length, RECENT);
  state.post(rule.webhook, JSON.stringify({ ...event, delivery: undefined })).then(
    (status) => (event.delivery = String(status)),
    (error: unknown) => (event.delivery = `failed: ${(error as Error).message}`),
  );
}

const eventOf = (rule: AlertRule, name: string, g: Group, status: AlertEvent['status'], at: number) => ({
  rule: rule.name,
  status,
  measure: rule.measure,
  group: name,
  groupBy: rule.groupBy,
  value: g.sum,
  threshold: rule.threshold,
  windowSeconds: rule.windowSeconds,
  at: new Date(at).toISOString(),
});

/** Drops points older than the window; resolves a firing group back under its threshold. */
function age(state: EngineState, rule: AlertRule, name: string, g: Group, at: number): void {
  const from = at - rule.windowSeconds * 1000;
  while (g.points.length && g.points[0]![0] <= from) {
    g.sum -= g.points.shift()![1];
    touch(state, rule.name, name);
  }
  if (g.firing && g.sum < rule.threshold) {
    g.firing = false;
    touch(state, rule.name, name);
    deliver(state, rule, eventOf(rule, name, g, 'resolved', at));
  }
}

function groupFor(state: EngineState, rule: AlertRule, name: string): Group {
  let byName = state.groups.get(rule.name);
  if (!byName) state.groups.set(rule.name, (byName = new Map()));
  let g = byName.get(name);
  if (!g) {
    // Bounded: the oldest group goes first (Map keeps insertion order).
    if (byName.size >= MAX_GROUPS_PER_RULE) {
      const oldest = byName.keys().next().value!;
      byName.delete(oldest);
      touch(state, rule.name, oldest);
    }
    byName.set(name, (g = { points: [], sum: 0, firing: false }));
  }
  return g;
}

/** Adds one model call's amount to its group under one rule; fires when the group crosses. */
function observeUnder(state: EngineState, rule: AlertRule, span: SpanRecord, at: number): void {
  const name = matches(rule, span) ? groupOf(rule, span) : undefined;
  const amount = name === undefined ? 0 : amountOf(state, rule, span);
  if (name === undefined || amount <= 0) return;
  const g = groupFor(state, rule, name);
  g.points.push([at, amount]);
  g.sum += amount;
  touch(state, rule.name, name);
  age(state, rule, name, g, at);
  const rearmed = g.firedAt === undefined || at - g.firedAt >= rule.windowSeconds * 1000;
  if (!g.firing && rearmed && g.sum >= rule.threshold) {
    g.firing = true;
    g.firedAt = at;
    deliver(state, rule, {
      ...eventOf(rule, name, g, 'firing', at),
      traceId: span.traceId,
      spanId: span.spanId,
    });
  }
}

function observeSpans(state: EngineState, spans: readonly SpanRecord[]): void {
  if (!state.rules.length) return;
  const at = state.now();
  for (const span of spans) {
    if (classifySpan(span) !== 'chat') continue;
    for (const rule of state.rules) observeUnder(state, rule, span, at);
  }
}

function ageAll(state: EngineState): void {
  const at = state.now();
  for (const rule of state.rules)
    for (const [name, g] of state.groups.get(rule.name) ?? []) {
      age(state, rule, name, g, at);
      if (g.points.length || g.firing) continue;
      state.groups.get(rule.name)!.delete(name);
      touch(state, rule.name, name);
    }
}

function replaceRules(state: EngineState, next: AlertRule[]): void {
  state.rules = next;
  const kept = (rule: string): boolean => next.some((r) => r.name === rule);
  for (const [rule, byName] of state.groups)
    if (!kept(rule)) for (const name of byName.keys()) touch(state, rule, name);
  state.groups = new Map([...state.groups].filter(([rule]) => kept(rule)));
}

function takeChanged(state: EngineState): AlertWindowChange[] {
  const out: AlertWindowChange[] = [];
  for (const [rule, names] of state.changed)
    for (const group of names) out.push({ rule, group, window: state.groups.get(rule)?.get(group) ?? null });
  state.changed = new Map();
  return out;
}

function restoreWindows(state: EngineState, saved: AlertWindows): void {
  for (const rule of state.rules)
    for (const [name, g] of Object.entries(saved[rule.name] ?? {})) {
      const group = groupFor(state, rule, name);
      group.points = g.points.map(([at, amount]) => [at, amount]);
      group.sum = g.sum;
      group.firing = g.firing;
      if (g.firedAt !== undefined) group.firedAt = g.firedAt;
    }
}

function firingNow(state: EngineState) {
  return state.rules.flatMap((rule) =>
    [...(state.groups.get(rule.name) ?? [])]
      .filter(([, g]) => g.firing)
      .map(([name, g]) => ({ ...eventOf(rule, name, g, 'firing', g.firedAt ?? state.now()) })),
  );
}

async function sendTest(state: EngineState, name: string): Promise<AlertEvent | undefined> {
  const rule = state.rules.find((r) => r.name === name);
  if (!rule) return undefined;
  const e: AlertEvent = {
    ...eventOf(rule, 'test', { points: [], sum: 0, firing: false }, 'test', state.now()),
  };
  e.delivery = await state.post(rule.webhook, JSON.stringify(e)).then(
    (status) => String(status),
    (error: unknown) => `failed: ${(error as Error).message}`,
  );
  return e;
}

export function createAlertEngine(options: AlertEngineOptions) {
  const state: EngineState = {
    prices: options.prices,
    now: options.now ?? Date.now,
    post: options.post ?? defaultPost,
    rules: [],
    groups: new Map(),
    recent: [],
    changed: new Map(),
  };
  return engineOf(state);
}

/** The engine's methods over its state. */
function engineOf(state: EngineState) {
  return {
    /** The committed spans of one request (the ingest queue's onCommit). */
    observe(spans: readonly SpanRecord[]): void {
      observeSpans(state, spans);
    },
    /** Ages every group (resolutions that no new span brings); the collector calls it every second. */
    tick(): void {
      ageAll(state);
    },
    setRules(next: AlertRule[]): void {
      replaceRules(state, next);
    },
    rules: (): readonly AlertRule[] => state.rules,
    /**
     * The groups whose windows changed since the last call, each with its window now (null: the
     * group is gone), to be saved; `retake` puts them back when the save failed.
     */
    takeChanges(): AlertWindowChange[] {
      return takeChanged(state);
    },
    retake(changes: readonly AlertWindowChange[]): void {
      for (const c of changes) touch(state, c.rule, c.group);
    },
    /** Takes saved windows back: those of rules that still exist; `tick` then ages them. */
    restore(saved: AlertWindows): void {
      restoreWindows(state, saved);
    },
    /** Rules, groups firing now, and the last firings and resolutions with their delivery. */
    state() {
      return { rules: state.rules, firing: firingNow(state), recent: state.recent };
    },
    /** Sends a test event to the rule's webhook; resolves with its answer. */
    test(name: string): Promise<AlertEvent | undefined> {
      return sendTest(state, name);
    },
  };
}

export type AlertEngine = ReturnType<typeof createAlertEngine>;

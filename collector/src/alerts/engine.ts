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

export function createAlertEngine(options: AlertEngineOptions) {
  const now = options.now ?? Date.now;
  const post = options.post ?? defaultPost;
  let rules: AlertRule[] = [];
  let groups = new Map<string, Map<string, Group>>();
  const recent: AlertEvent[] = [];
  /** The groups whose windows changed since they were last taken (rule → group names). */
  let changed = new Map<string, Set<string>>();
  const touch = (rule: string, name: string): void => {
    let names = changed.get(rule);
    if (!names) changed.set(rule, (names = new Set()));
    names.add(name);
  };

  const amountOf = (rule: AlertRule, span: SpanRecord): number => {
    const usage = spanTokenUsage(span.attributes);
    if (!usage) return 0;
    if (rule.measure === 'tokens') return usage.total;
    return costOfUsage({ [usageModel(span.attributes)]: usage }, options.prices)?.usd ?? 0;
  };

  const deliver = (rule: AlertRule, event: AlertEvent): void => {
    recent.unshift(event);
    recent.length = Math.min(recent.length, RECENT);
    post(rule.webhook, JSON.stringify({ ...event, delivery: undefined })).then(
      (status) => (event.delivery = String(status)),
      (error: unknown) => (event.delivery = `failed: ${(error as Error).message}`),
    );
  };

  const event = (rule: AlertRule, name: string, g: Group, status: AlertEvent['status'], at: number) => ({
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
  const age = (rule: AlertRule, name: string, g: Group, at: number): void => {
    const from = at - rule.windowSeconds * 1000;
    while (g.points.length && g.points[0]![0] <= from) {
      g.sum -= g.points.shift()![1];
      touch(rule.name, name);
    }
    if (g.firing && g.sum < rule.threshold) {
      g.firing = false;
      touch(rule.name, name);
      deliver(rule, event(rule, name, g, 'resolved', at));
    }
  };

  const groupFor = (rule: AlertRule, name: string): Group => {
    let byName = groups.get(rule.name);
    if (!byName) groups.set(rule.name, (byName = new Map()));
    let g = byName.get(name);
    if (!g) {
      // Bounded: the oldest group goes first (Map keeps insertion order).
      if (byName.size >= MAX_GROUPS_PER_RULE) {
        const oldest = byName.keys().next().value!;
        byName.delete(oldest);
        touch(rule.name, oldest);
      }
      byName.set(name, (g = { points: [], sum: 0, firing: false }));
    }
    return g;
  };

  return {
    /** The committed spans of one request (the ingest queue's onCommit). */
    observe(spans: readonly SpanRecord[]): void {
      if (!rules.length) return;
      const at = now();
      for (const span of spans) {
        if (classifySpan(span) !== 'chat') continue;
        for (const rule of rules) {
          const name = matches(rule, span) ? groupOf(rule, span) : undefined;
          const amount = name === undefined ? 0 : amountOf(rule, span);
          if (name === undefined || amount <= 0) continue;
          const g = groupFor(rule, name);
          g.points.push([at, amount]);
          g.sum += amount;
          touch(rule.name, name);
          age(rule, name, g, at);
          const rearmed = g.firedAt === undefined || at - g.firedAt >= rule.windowSeconds * 1000;
          if (!g.firing && rearmed && g.sum >= rule.threshold) {
            g.firing = true;
            g.firedAt = at;
            deliver(rule, {
              ...event(rule, name, g, 'firing', at),
              traceId: span.traceId,
              spanId: span.spanId,
            });
          }
        }
      }
    },
    /** Ages every group (resolutions that no new span brings); the collector calls it every second. */
    tick(): void {
      const at = now();
      for (const rule of rules)
        for (const [name, g] of groups.get(rule.name) ?? []) {
          age(rule, name, g, at);
          if (g.points.length || g.firing) continue;
          groups.get(rule.name)!.delete(name);
          touch(rule.name, name);
        }
    },
    setRules(next: AlertRule[]): void {
      rules = next;
      const kept = (rule: string): boolean => next.some((r) => r.name === rule);
      for (const [rule, byName] of groups)
        if (!kept(rule)) for (const name of byName.keys()) touch(rule, name);
      groups = new Map([...groups].filter(([rule]) => kept(rule)));
    },
    rules: (): readonly AlertRule[] => rules,
    /**
     * The groups whose windows changed since the last call, each with its window now (null: the
     * group is gone), to be saved; `retake` puts them back when the save failed.
     */
    takeChanges(): AlertWindowChange[] {
      const out: AlertWindowChange[] = [];
      for (const [rule, names] of changed)
        for (const group of names) out.push({ rule, group, window: groups.get(rule)?.get(group) ?? null });
      changed = new Map();
      return out;
    },
    retake(changes: readonly AlertWindowChange[]): void {
      for (const c of changes) touch(c.rule, c.group);
    },
    /** Takes saved windows back: those of rules that still exist; `tick` then ages them. */
    restore(saved: AlertWindows): void {
      for (const rule of rules)
        for (const [name, g] of Object.entries(saved[rule.name] ?? {})) {
          const group = groupFor(rule, name);
          group.points = g.points.map(([at, amount]) => [at, amount]);
          group.sum = g.sum;
          group.firing = g.firing;
          if (g.firedAt !== undefined) group.firedAt = g.firedAt;
        }
    },
    /** Rules, groups firing now, and the last firings and resolutions with their delivery. */
    state() {
      const firing = rules.flatMap((rule) =>
        [...(groups.get(rule.name) ?? [])]
          .filter(([, g]) => g.firing)
          .map(([name, g]) => ({ ...event(rule, name, g, 'firing', g.firedAt ?? now()) })),
      );
      return { rules, firing, recent };
    },
    /** Sends a test event to the rule's webhook; resolves with its answer. */
    async test(name: string): Promise<AlertEvent | undefined> {
      const rule = rules.find((r) => r.name === name);
      if (!rule) return undefined;
      const e: AlertEvent = { ...event(rule, 'test', { points: [], sum: 0, firing: false }, 'test', now()) };
      e.delivery = await post(rule.webhook, JSON.stringify(e)).then(
        (status) => String(status),
        (error: unknown) => `failed: ${(error as Error).message}`,
      );
      return e;
    },
  };
}

export type AlertEngine = ReturnType<typeof createAlertEngine>;

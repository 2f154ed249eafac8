import { type Context, ROOT_CONTEXT } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';

/** Stands for a key deleted in a later link of the chain. */
const DELETED = Symbol('agentrt.lean.deleted');
/** Chains longer than this are folded into one Map, so a lookup stays short. */
const MAX_DEPTH = 16;

/**
 * An immutable context as a persistent chain: `setValue` adds one link on top of its parent
 * instead of copying the parent's Map (what the API's BaseContext does on every call). A lookup
 * walks at most MAX_DEPTH links, then one Map.
 */
export class LeanContext implements Context {
  private constructor(
    private readonly parent: LeanContext | undefined,
    private readonly key: symbol | undefined,
    private readonly value: unknown,
    private readonly depth: number,
    private readonly folded: ReadonlyMap<symbol, unknown> | undefined,
  ) {}

  static readonly ROOT = new LeanContext(undefined, undefined, undefined, 0, undefined);

  getValue(key: symbol): unknown {
    return LeanContext.lookup(this, key);
  }

  private static lookup(start: LeanContext, key: symbol): unknown {
    for (let node: LeanContext | undefined = start; node !== undefined; node = node.parent) {
      if (node.key === key) return node.value === DELETED ? undefined : node.value;
      if (node.folded !== undefined) {
        const value = node.folded.get(key);
        return value === DELETED ? undefined : value;
      }
    }
    return undefined;
  }

  /** A value already there gives this context back (it is immutable: equal contents, same object). */
  setValue(key: symbol, value: unknown): Context {
    return LeanContext.lookup(this, key) === value ? this : this.link(key, value);
  }

  deleteValue(key: symbol): Context {
    return this.getValue(key) === undefined ? this : this.link(key, DELETED);
  }

  private link(key: symbol, value: unknown): LeanContext {
    if (this.depth < MAX_DEPTH) return new LeanContext(this, key, value, this.depth + 1, undefined);
    const map = new Map<symbol, unknown>();
    LeanContext.collect(this, map);
    map.set(key, value);
    return new LeanContext(undefined, undefined, undefined, 0, map);
  }

  /** This chain's values into `map`, the nearest link winning. */
  private static collect(start: LeanContext, map: Map<symbol, unknown>): void {
    const links: LeanContext[] = [];
    let node: LeanContext | undefined = start;
    for (; node !== undefined && node.folded === undefined; node = node.parent) links.push(node);
    if (node?.folded !== undefined) for (const [k, v] of node.folded) map.set(k, v);
    for (let i = links.length - 1; i >= 0; i--) {
      const link = links[i]!;
      if (link.key !== undefined) map.set(link.key, link.value);
    }
  }
}

/**
 * Node's AsyncLocalStorage context manager whose empty context is a {@link LeanContext}, so every
 * context the app derives from `context.active()` is one. `with` the context already active runs
 * the function as it is: a span the sampler drops under a non-recording parent is that parent,
 * so `context.with(trace.setSpan(context.active(), span), fn)` (how Strands runs each step) gets
 * the active context back from setValue and costs no new async context frame.
 */
export class LeanContextManager extends AsyncLocalStorageContextManager {
  override active(): Context {
    const active = super.active();
    return active === ROOT_CONTEXT ? LeanContext.ROOT : active;
  }

  override with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    if (context === this.active()) return thisArg == null ? fn(...args) : fn.apply(thisArg, args);
    return super.with(context, fn, thisArg, ...args);
  }
}

import type { Attributes, AttributeValue } from '@opentelemetry/api';

/** What every series holds: its attribute set, copied when it was first seen. */
export interface Series {
  readonly attributes: Attributes;
  /** Number of keys in `attributes` (for the identity cache's check). */
  readonly keyCount: number;
}

/** How many recently used attribute objects a series map remembers by identity. */
const RECENT = 8;

/**
 * The series of one instrument by attribute set. A caller passing one of the last few attributes
 * objects again (a pre-bound set) is found by identity, then checked key by key in case it was
 * mutated; a fresh object equal to one of the last few sets is found by comparing it with them
 * key by key; anything else by a key of its sorted entries. No hashing, no JSON, and no per-record
 * WeakMap entry for the many callers that build a fresh object each time.
 */
export class SeriesMap<S extends Series> {
  private readonly byKey = new Map<string, S>();
  private readonly recentObjects: (Attributes | undefined)[] = new Array<Attributes | undefined>(RECENT);
  private readonly recentSeries: (S | undefined)[] = new Array<S | undefined>(RECENT);
  private next = 0;

  constructor(private readonly create: (attributes: Attributes, keyCount: number) => S) {}

  get(attributes: Attributes): S {
    const slot = this.recentObjects.indexOf(attributes);
    if (slot >= 0 && sameAttributes(this.recentSeries[slot]!, attributes)) return this.recentSeries[slot]!;
    const recent = this.recentWithSameAttributes(attributes);
    if (recent >= 0) {
      // a fresh object with a recent set (most callers build one per record): no key to build
      this.recentObjects[recent] = attributes;
      return this.recentSeries[recent]!;
    }
    const key = attributesKey(attributes);
    let series = this.byKey.get(key);
    if (series === undefined) {
      const copy = { ...attributes };
      series = this.create(copy, Object.keys(copy).length);
      this.byKey.set(key, series);
    }
    // A mutated object takes its old slot over; any other takes the oldest slot.
    this.remember(slot >= 0 ? slot : this.nextSlot(), attributes, series);
    return series;
  }

  /** The slot of a recent series whose attributes equal `attributes`, or -1. */
  private recentWithSameAttributes(attributes: Attributes): number {
    for (let i = 0; i < RECENT; i++) {
      const series = this.recentSeries[i];
      if (series !== undefined && sameAttributes(series, attributes)) return i;
    }
    return -1;
  }

  /** Series in the order they were first seen. */
  values(): IterableIterator<S> {
    return this.byKey.values();
  }

  private nextSlot(): number {
    const slot = this.next;
    this.next = (slot + 1) % RECENT;
    return slot;
  }

  private remember(slot: number, attributes: Attributes, series: S): void {
    this.recentObjects[slot] = attributes;
    this.recentSeries[slot] = series;
  }
}

function sameAttributes(series: Series, attributes: Attributes): boolean {
  let count = 0;
  for (const key in attributes) {
    if (!sameValue(series.attributes[key], attributes[key])) return false;
    count++;
  }
  return count === series.keyCount;
}

function sameValue(a: AttributeValue | undefined, b: AttributeValue | undefined): boolean {
  if (a === b) return true;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A key equal for equal attribute sets whatever their key order (the SDK's sorted-entries rule). */
export function attributesKey(attributes: Attributes): string {
  const keys = Object.keys(attributes);
  if (!isSorted(keys)) keys.sort();
  let key = '';
  for (const name of keys) key += `${name}\u0000${valueKey(attributes[name])}\u0001`;
  return key;
}

function isSorted(keys: readonly string[]): boolean {
  for (let i = 1; i < keys.length; i++) if (keys[i - 1]! > keys[i]!) return false;
  return true;
}

function valueKey(value: AttributeValue | undefined): string {
  if (typeof value === 'string') return `s${value}`;
  if (Array.isArray(value)) return `a${value.map((v) => valueKey(v ?? undefined)).join('\u0002')}`;
  return `${typeof value}${String(value)}`;
}

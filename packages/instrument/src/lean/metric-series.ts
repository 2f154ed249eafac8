import type { Attributes, AttributeValue } from '@opentelemetry/api';

/** What every series holds: its attribute set, copied when it was first seen. */
export interface Series {
  readonly attributes: Attributes;
  /** Number of keys in `attributes` (for the identity cache's check). */
  readonly keyCount: number;
}

/**
 * The series of one instrument by attribute set. A caller passing the same attributes object again
 * (a pre-bound set) is found by identity, then checked key by key in case it was mutated; anything
 * else is found by a key of its sorted entries. No hashing, no JSON.
 */
export class SeriesMap<S extends Series> {
  private readonly byObject = new WeakMap<Attributes, S>();
  private readonly byKey = new Map<string, S>();

  constructor(private readonly create: (attributes: Attributes, keyCount: number) => S) {}

  get(attributes: Attributes): S {
    const known = this.byObject.get(attributes);
    if (known !== undefined && sameAttributes(known, attributes)) return known;
    const key = attributesKey(attributes);
    let series = this.byKey.get(key);
    if (series === undefined) {
      const copy = { ...attributes };
      series = this.create(copy, Object.keys(copy).length);
      this.byKey.set(key, series);
    }
    this.byObject.set(attributes, series);
    return series;
  }

  /** Series in the order they were first seen. */
  values(): IterableIterator<S> {
    return this.byKey.values();
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

/**
 * What was computed for the last few objects, found by identity: a few strong slots, reused round
 * robin. For values derived from immutable objects that recur within a request (a context, a
 * baggage) and are then dropped: a WeakMap costs an ephemeron entry and its collection for every
 * fresh object, about 4 µs each on the reference agent, where most objects are used once or twice.
 * Holds at most `size` keys alive until their slots are reused.
 */
export class RecentMemo<K extends object, V> {
  private readonly keys: (K | undefined)[];
  private readonly values: (V | undefined)[];
  private next = 0;

  constructor(private readonly size = 4) {
    this.keys = new Array<K | undefined>(size);
    this.values = new Array<V | undefined>(size);
  }

  /** The value remembered for `key`, or `compute(key)` remembered in the oldest slot. */
  get(key: K, compute: (key: K) => V): V {
    const slot = this.keys.indexOf(key);
    if (slot >= 0) return this.values[slot]!;
    const value = compute(key);
    this.keys[this.next] = key;
    this.values[this.next] = value;
    this.next = (this.next + 1) % this.size;
    return value;
  }
}

/** How far back new sessions count as a version's recent demand. */
export const DEMAND_WINDOW_MS = 30_000;

/**
 * Sizes each version's warm pool from its recent demand: as many pre-started workers as it got new
 * sessions in the last window, never fewer than the floor (AGENTRT_WARM_POOL_SIZE) nor more than the
 * cap (AGENTRT_WARM_POOL_MAX). A version nobody starts sessions of shrinks back to the floor.
 */
export function createWarmDemand(floor: number, cap: number, windowMs = DEMAND_WINDOW_MS) {
  const starts = new Map<string, number[]>();
  const recent = (key: string, now: number): number[] => {
    const kept = (starts.get(key) ?? []).filter((t) => now - t < windowMs);
    if (kept.length > 0) starts.set(key, kept);
    else starts.delete(key);
    return kept;
  };
  return {
    /** A new session of the version asked for a worker. */
    record(key: string, now = Date.now()): void {
      starts.set(key, [...recent(key, now), now]);
    },
    /** How many warm workers the version should have now. */
    target(key: string, now = Date.now()): number {
      return Math.max(floor, Math.min(Math.max(cap, floor), recent(key, now).length));
    },
    /** Whether the target can still change without new sessions (demand that will age out). */
    decaying(key: string, now = Date.now()): boolean {
      return recent(key, now).length > 0;
    },
    forget(key: string): void {
      starts.delete(key);
    },
  };
}

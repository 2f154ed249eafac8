// One group's rolling window of a cost alert rule (engine.ts), and how a saved one is checked: the
// windows are kept in the store (store.ts AlertWindowBackend) as JSON, one per rule and group, and
// read back at start by this collector or by another on the same store.

export interface AlertWindow {
  /** [time ms, amount] in arrival order. */
  points: [number, number][];
  sum: number;
  firedAt?: number;
  firing: boolean;
}

/** The windows of every rule's groups: rule name → group name → window. */
export type AlertWindows = Record<string, Record<string, AlertWindow>>;

/** A group whose window changed: its window now, or null when the group is gone. */
export interface AlertWindowChange {
  rule: string;
  group: string;
  window: AlertWindow | null;
}

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

export function isAlertWindow(g: unknown): g is AlertWindow {
  if (typeof g !== 'object' || g === null) return false;
  const { points, sum, firing, firedAt } = g as Record<string, unknown>;
  return (
    Array.isArray(points) &&
    points.every((p) => Array.isArray(p) && p.length === 2 && isNumber(p[0]) && isNumber(p[1])) &&
    isNumber(sum) &&
    typeof firing === 'boolean' &&
    (firedAt === undefined || isNumber(firedAt))
  );
}

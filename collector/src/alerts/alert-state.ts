// The alert windows saved in the data dir (alert-state.json): written when they changed, at most
// once a tick and at close, through a rename (a crash leaves the last whole file); read back at
// start, so a restarted collector neither fires a rule again in the window it fired in nor forgets
// to resolve it. A file that cannot be read is reported and ignored: the windows start empty.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import type { AlertEngine, AlertWindows, Group } from './engine.js';

export const ALERT_STATE_FILE = 'alert-state.json';

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

function isGroup(g: unknown): g is Group {
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

/** The saved windows, or why they cannot be used. */
function parseWindows(text: string): AlertWindows | string {
  const saved: unknown = JSON.parse(text);
  if (typeof saved !== 'object' || saved === null || Array.isArray(saved)) return 'not an object';
  const windows: AlertWindows = Object.create(null) as AlertWindows;
  for (const [rule, byName] of Object.entries(saved)) {
    if (typeof byName !== 'object' || byName === null) return `rule ${rule}: not an object`;
    const bad = Object.entries(byName).find(([, g]) => !isGroup(g));
    if (bad) return `rule ${rule}, group ${bad[0]}: not a window`;
    windows[rule] = Object.assign(Object.create(null), byName) as Record<string, Group>;
  }
  return windows;
}

/** Restores the saved windows into `engine` (its rules set first); returns the saver. */
export function persistAlertWindows(engine: AlertEngine, dataDir: string, logger: Logger) {
  const path = join(dataDir, ALERT_STATE_FILE);
  let text: string | undefined;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    // None saved yet.
  }
  try {
    const windows = text === undefined ? undefined : parseWindows(text);
    if (typeof windows === 'string') logger.warn('alert windows not restored', { file: path, why: windows });
    else if (windows) engine.restore(windows);
  } catch (error) {
    logger.warn('alert windows not restored', { file: path, why: (error as Error).message });
  }
  let saved = engine.changes();
  return {
    /** Writes the windows when they changed since the last save. */
    save(): void {
      if (engine.changes() === saved) return;
      saved = engine.changes();
      try {
        writeFileSync(`${path}.tmp`, JSON.stringify(engine.windows()));
        renameSync(`${path}.tmp`, path);
      } catch (error) {
        logger.warn('alert windows not saved', { file: path, error: (error as Error).message });
      }
    },
  };
}

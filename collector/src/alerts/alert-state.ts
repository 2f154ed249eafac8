// The alert windows kept in the store (store.ts AlertWindowBackend), one per rule and group: the
// groups that changed are saved at most once a tick and at close; every saved window is read back
// at start, so a restarted collector — or another one on the same store — neither fires a rule
// again in the window it fired in nor forgets to resolve it. A saved window that is not one is
// reported and skipped; a store that cannot be read starts the windows empty, said in the log.
import type { Logger } from '../logger.js';
import type { AlertWindowBackend, SavedAlertWindow } from '../store/store.js';
import { type AlertWindowChange, type AlertWindows, isAlertWindow } from './alert-window.js';
import type { AlertEngine } from './engine.js';

/** The saved windows that are windows; the others named in `bad`. */
function parseWindows(rows: { rule: string; group: string; json: string }[], bad: string[]): AlertWindows {
  const windows: AlertWindows = Object.create(null) as AlertWindows;
  for (const { rule, group, json } of rows) {
    let window: unknown;
    try {
      window = JSON.parse(json);
    } catch {
      // Reported below with the others.
    }
    if (!isAlertWindow(window)) {
      bad.push(`rule ${rule}, group ${group}: not a window`);
      continue;
    }
    windows[rule] ??= Object.create(null) as Record<string, never>;
    windows[rule][group] = window;
  }
  return windows;
}

const saved = (c: AlertWindowChange): SavedAlertWindow => ({
  rule: c.rule,
  group: c.group,
  json: c.window && JSON.stringify(c.window),
});

/** Restores the saved windows into `engine` (its rules set first); returns the saver. */
export async function persistAlertWindows(engine: AlertEngine, store: AlertWindowBackend, logger: Logger) {
  try {
    const bad: string[] = [];
    engine.restore(parseWindows(await store.read(), bad));
    if (bad.length) logger.warn('alert windows not restored', { why: bad.slice(0, 10).join('; ') });
  } catch (error) {
    logger.warn('alert windows not restored', { why: (error as Error).message });
  }
  let saving: Promise<void> | undefined;
  const save = async (): Promise<void> => {
    const changes = engine.takeChanges();
    if (!changes.length) return;
    try {
      await store.write(changes.map(saved));
    } catch (error) {
      // Saved with the next tick's changes: the store may be back by then.
      engine.retake(changes);
      logger.warn('alert windows not saved', { error: (error as Error).message });
    }
  };
  return {
    /** Saves the groups that changed since the last save; one save at a time. */
    async save(): Promise<void> {
      while (saving) await saving;
      saving = save().finally(() => (saving = undefined));
      return saving;
    },
  };
}

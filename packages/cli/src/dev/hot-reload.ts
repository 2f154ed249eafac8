// `agentrt dev`'s hot reload: it watches each agent's sources; a save transpiles the changed files
// (transpile.ts) and has the runtime give the agent's live sessions fresh workers on the new code,
// started beside the old ones (same session ids; a call arriving meanwhile waits for the new worker
// rather than for the old one's shutdown). A build that fails restarts nothing: the old
// workers keep serving, and the error goes to the terminal and, as a log record of the service
// `agentrt-dev`, to the collector (where the Inspector shows it).
import { type FSWatcher, existsSync, readdirSync, statSync, watch } from 'node:fs';
import { join } from 'node:path';
import { BuildError, type AgentBuild, createAgentBuild } from './transpile.js';

export interface HotReloadAgent {
  /** The agent runtime's name and ARN. */
  name: string;
  arn: string;
  /** The agent's folder (its tsconfig.json and sources). */
  dir: string;
}

/** What the hot reload needs of the runtime: fresh workers for a runtime's live sessions. */
export interface ReloadRuntime {
  restartSessions(arn: string): Promise<{ restarted: number }>;
}

export interface ReloadEvent {
  agent: string;
  arn: string;
  status: 'reloaded' | 'failed';
  /** The build error, or what was rebuilt and restarted. */
  message: string;
  files: string[];
  buildMs: number;
  restartMs: number;
  sessions: number;
}

export interface HotReloadOptions {
  agents: readonly HotReloadAgent[];
  runtime: ReloadRuntime;
  /** A line for the terminal. */
  log: (line: string) => void;
  /** Every reload or failed build (the collector's log record, tests). */
  onEvent?: (event: ReloadEvent) => void;
  /** Saves this close together are one rebuild (editors write a file in several steps). */
  debounceMs?: number;
}

const SOURCE = /\.[mc]?tsx?$/;

/** Starts watching; `close()` stops. */
export async function startHotReload(options: HotReloadOptions): Promise<{ close(): void }> {
  const watchers: { close(): void }[] = [];
  for (const agent of options.agents) {
    const build = await createAgentBuild(agent.dir);
    watchers.push(watchAgent(agent, build, options));
  }
  return {
    close() {
      for (const w of watchers) w.close();
    },
  };
}

function watchAgent(agent: HotReloadAgent, build: AgentBuild, options: HotReloadOptions): { close(): void } {
  const changed = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> = Promise.resolve();
  return watchTree(build.rootDir, (path) => {
    if (!SOURCE.test(path) || path.endsWith('.d.ts')) return;
    changed.add(path);
    clearTimeout(timer);
    timer = setTimeout(() => {
      const files = [...changed];
      changed.clear();
      // One rebuild at a time per agent: a save during a rebuild is the next one.
      running = running.then(() => reload(agent, build, files, options));
    }, options.debounceMs ?? 30);
  });
}

const isDirectory = (path: string): boolean => {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
};

/**
 * Calls `onFile` with each file changed or created under `dir`: one non-recursive watcher per
 * folder (new folders are watched as they appear). Node's recursive watcher on Linux follows each
 * file by its inode, so a file saved by renaming a new one over it — `sed -i`, vim, editors' "safe
 * write" — was never seen again after its first such save; a folder's watcher sees every entry.
 */
function watchTree(dir: string, onFile: (path: string) => void): { close(): void } {
  const watchers = new Map<string, FSWatcher>();
  const add = (folder: string): void => {
    if (watchers.has(folder)) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(folder, (_event, name) => {
        if (!name) return;
        const path = join(folder, name.toString());
        if (isDirectory(path)) addTree(path);
        else onFile(path);
      });
    } catch {
      return; // Gone already.
    }
    watcher.on('error', () => {
      watcher.close();
      watchers.delete(folder);
    });
    watchers.set(folder, watcher);
  };
  const addTree = (folder: string): void => {
    add(folder);
    let entries: string[] = [];
    try {
      entries = readdirSync(folder, { withFileTypes: true })
        .filter((e) => e.isDirectory() && e.name !== 'node_modules')
        .map((e) => e.name);
    } catch {
      // Gone meanwhile.
    }
    for (const name of entries) addTree(join(folder, name));
  };
  addTree(dir);
  return {
    close() {
      for (const w of watchers.values()) w.close();
    },
  };
}

async function reload(
  agent: HotReloadAgent,
  build: AgentBuild,
  files: string[],
  options: HotReloadOptions,
): Promise<void> {
  const started = performance.now();
  const event: ReloadEvent = {
    agent: agent.name,
    arn: agent.arn,
    status: 'reloaded',
    message: '',
    files,
    buildMs: 0,
    restartMs: 0,
    sessions: 0,
  };
  try {
    await build.build(files.filter((f) => existsSync(f)));
    event.buildMs = performance.now() - started;
    event.sessions = (await options.runtime.restartSessions(agent.arn)).restarted;
    event.restartMs = performance.now() - started - event.buildMs;
    event.message = `${files.length} file(s) rebuilt in ${Math.round(event.buildMs)} ms; ${event.sessions} session(s) on new workers in ${Math.round(event.restartMs)} ms`;
    options.log(`↻ ${agent.name}: ${event.message}\n`);
  } catch (error) {
    event.status = 'failed';
    event.buildMs = performance.now() - started;
    event.message =
      error instanceof BuildError ? error.message : `reload failed: ${(error as Error).message}`;
    const what = error instanceof BuildError ? 'build failed' : 'the new code did not start';
    options.log(
      `✖ ${agent.name}: ${what}, the running sessions keep the previous code\n${indent(event.message)}\n`,
    );
  }
  options.onEvent?.(event);
}

const indent = (text: string): string => text.replace(/^/gm, '    ');

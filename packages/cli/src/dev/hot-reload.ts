// `agentrt dev`'s hot reload: it watches each agent's sources; a save transpiles the changed files
// (transpile.ts) and stops the agent's live session workers, so the next invocation of a session —
// same session id — starts a worker on the new code. A build that fails stops nothing: the old
// workers keep serving, and the error goes to the terminal and, as a log record of the service
// `agentrt-dev`, to the collector (where the Inspector shows it).
import { type FSWatcher, existsSync, watch } from 'node:fs';
import { join } from 'node:path';
import { BuildError, type AgentBuild, createAgentBuild } from './transpile.js';

export interface HotReloadAgent {
  /** The agent runtime's name and ARN. */
  name: string;
  arn: string;
  /** The agent's folder (its tsconfig.json and sources). */
  dir: string;
}

/** What the hot reload needs of the runtime: its live sessions, and StopRuntimeSession. */
export interface ReloadRuntime {
  activeSessions(): Promise<{ runtimeArn: string; sessionId: string; inflight: number }[]>;
  stopSession(arn: string, sessionId: string): Promise<unknown>;
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
  const watchers: FSWatcher[] = [];
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

function watchAgent(agent: HotReloadAgent, build: AgentBuild, options: HotReloadOptions): FSWatcher {
  const changed = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> = Promise.resolve();
  const watcher = watch(build.rootDir, { recursive: true }, (_event, name) => {
    if (!name || !SOURCE.test(name) || name.endsWith('.d.ts')) return;
    changed.add(join(build.rootDir, name));
    clearTimeout(timer);
    timer = setTimeout(() => {
      const files = [...changed];
      changed.clear();
      // One rebuild at a time per agent: a save during a rebuild is the next one.
      running = running.then(() => reload(agent, build, files, options));
    }, options.debounceMs ?? 30);
  });
  return watcher;
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
    event.sessions = await restartSessions(agent.arn, options.runtime);
    event.restartMs = performance.now() - started - event.buildMs;
    event.message = `${files.length} file(s) rebuilt in ${Math.round(event.buildMs)} ms; ${event.sessions} session worker(s) restart on their next invocation`;
    options.log(`↻ ${agent.name}: ${event.message}\n`);
  } catch (error) {
    event.status = 'failed';
    event.buildMs = performance.now() - started;
    event.message =
      error instanceof BuildError ? error.message : `reload failed: ${(error as Error).message}`;
    options.log(
      `✖ ${agent.name}: build failed, the running sessions keep the previous code\n${indent(event.message)}\n`,
    );
  }
  options.onEvent?.(event);
}

/** A session answering a call is stopped once it answered, or after this long regardless. */
const DRAIN_MS = 10_000;

/** Stops the runtime's live sessions, each once it has no call in flight; returns how many. */
async function restartSessions(arn: string, runtime: ReloadRuntime): Promise<number> {
  const mine = async () => (await runtime.activeSessions()).filter((s) => s.runtimeArn === arn);
  const deadline = Date.now() + DRAIN_MS;
  const stopped = new Set<string>();
  for (let live = await mine(); live.some((s) => !stopped.has(s.sessionId)); live = await mine()) {
    const idle = live.filter((s) => !stopped.has(s.sessionId) && (s.inflight === 0 || Date.now() > deadline));
    await Promise.all(idle.map((s) => runtime.stopSession(arn, s.sessionId)));
    for (const s of idle) stopped.add(s.sessionId);
    if (idle.length < live.length) await new Promise((r) => setTimeout(r, 50));
  }
  return stopped.size;
}

const indent = (text: string): string => text.replace(/^/gm, '    ');

import { execFile } from 'node:child_process';
import { HELPER_ENV, helperPath } from './helpers.js';

/** The container engines image artifacts run on: podman (daemonless, preferred) or a Docker engine. */
export type ContainerEngine = 'podman' | 'docker';
export type ContainerEngineSetting = 'auto' | ContainerEngine;

/** Runs an engine command (absolute path, HELPER_ENV); resolves with its stdout, rejects with its own words. */
export function engineCommand(engine: ContainerEngine, args: string[], timeoutMs = 120_000): Promise<string> {
  const path = helperPath(engine);
  if (!path) return Promise.reject(new Error(`${engine} is not installed`));
  return new Promise((resolve, reject) => {
    execFile(path, args, { env: HELPER_ENV, timeout: timeoutMs }, (error, stdout, stderr) => {
      if (!error) return resolve(stdout);
      const words = (stderr || error.message).trim().split('\n').filter(Boolean).at(-1) ?? error.message;
      reject(new Error(`${engine} ${args[0]}: ${words.replace(/^Error: /, '')}`));
    });
  });
}

const probes = new Map<ContainerEngine, Promise<string | undefined>>();

/** Undefined when the engine answers (a podman store, a Docker daemon), else why not. Probed once. */
function probe(engine: ContainerEngine): Promise<string | undefined> {
  let answer = probes.get(engine);
  if (!answer) {
    const args =
      engine === 'podman'
        ? ['info', '--format', '{{.Store.GraphDriverName}}']
        : ['version', '--format', '{{.Server.Version}}'];
    answer = engineCommand(engine, args, 10_000).then(
      (out) => (out.trim() ? undefined : 'no answer'),
      (error: unknown) => (error as Error).message,
    );
    probes.set(engine, answer);
  }
  return answer;
}

/**
 * The engine image artifacts use: the one asked for, else podman when it answers, else a Docker
 * engine. Rejects with why none can run images here.
 */
export async function chooseContainerEngine(setting: ContainerEngineSetting): Promise<ContainerEngine> {
  const candidates: ContainerEngine[] = setting === 'auto' ? ['podman', 'docker'] : [setting];
  const reasons: string[] = [];
  for (const engine of candidates) {
    const problem = await probe(engine);
    if (problem === undefined) return engine;
    reasons.push(`${engine}: ${problem}`);
  }
  throw new Error(reasons.join('; '));
}

/**
 * Makes sure the image is in the engine's local store: there already (built or loaded here), else
 * pulled from the registry its reference names. Rejects with the engine's own words.
 */
export async function ensureImage(engine: ContainerEngine, image: string): Promise<void> {
  const present = await engineCommand(
    engine,
    ['image', 'inspect', '--format', '{{.Id}}', image],
    30_000,
  ).then(
    () => true,
    () => false,
  );
  if (!present) await engineCommand(engine, ['pull', '--quiet', image]);
}

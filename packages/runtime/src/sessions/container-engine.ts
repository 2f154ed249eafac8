import { HelperFailedError, helperPath, runHelper } from './helpers.js';

/** The container engines image artifacts run on: podman (daemonless, preferred) or a Docker engine. */
export type ContainerEngine = 'podman' | 'docker';
export type ContainerEngineSetting = 'auto' | ContainerEngine;

/**
 * Runs an engine command (absolute path, HELPER_ENV, 120 s unless told); resolves with its stdout,
 * rejects with its own words. `cwd`: see RunHelperOptions.
 */
export function engineCommand(
  engine: ContainerEngine,
  args: string[],
  { timeoutMs = 120_000, cwd }: { timeoutMs?: number; cwd?: string } = {},
): Promise<string> {
  const path = helperPath(engine);
  if (!path) return Promise.reject(new Error(`${engine} is not installed`));
  const what = `${engine} ${args[0]}`;
  return runHelper([path, ...args], what, { timeoutMs, ...(cwd ? { cwd } : {}) }).catch((error: unknown) => {
    const words = error instanceof HelperFailedError ? error.lastWords : String(error);
    throw new Error(`${what}: ${words.replace(/^Error: /, '')}`);
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
    answer = engineCommand(engine, args, { timeoutMs: 10_000 }).then(
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

/** The image a version runs: the reference it was created with and what that named then. */
export interface PinnedImage {
  ref: string;
  /** The image id (config digest) the version's sessions run, whatever the tag names later. */
  id: string;
  /** The manifest digest, `sha256:…`, when the engine knows one. */
  digest?: string;
}

/** Registries the operator allows over plain HTTP (`host:port`), as Docker's insecure-registries. */
export type InsecureRegistries = readonly string[];

/** The registry a reference names (`host[:port]`), or undefined for a name of the local store. */
export function registryOf(ref: string): string | undefined {
  const slash = ref.indexOf('/');
  if (slash < 0) return undefined;
  const first = ref.slice(0, slash);
  if (first === 'localhost') return undefined; // podman's name for images built here
  return first.includes('.') || first.includes(':') ? first : undefined;
}

/** This host's platform as images name theirs (`linux/amd64`). */
export const HOST_PLATFORM = `linux/${({ x64: 'amd64', ia32: '386' } as Record<string, string>)[process.arch] ?? process.arch}`;

interface InspectedImage extends PinnedImage {
  platform: string;
}

async function inspectImage(engine: ContainerEngine, ref: string): Promise<InspectedImage | undefined> {
  const format = '{{.Id}}|{{.Os}}/{{.Architecture}}|{{json .RepoDigests}}';
  const out = await engineCommand(engine, ['image', 'inspect', '--format', format, ref], {
    timeoutMs: 30_000,
  }).catch(() => undefined);
  const [id, platform = '', digests = '[]'] = (out ?? '').trim().split('|');
  if (!id) return undefined;
  // The digest of the reference's own repository when the store has one (pulled or pushed there).
  const repository = ref.replace(/(@.*|:[^/:]*)$/, '');
  const named = (JSON.parse(digests) as string[] | null) ?? [];
  const digest = (named.find((d) => d.startsWith(`${repository}@`)) ?? named[0])?.split('@')[1];
  return { ref, id, platform, ...(digest ? { digest } : {}) };
}

/**
 * Pins a reference to the image it names now, as an engine's `--pull=newer` resolves it: a
 * reference naming a registry is pulled (the registry's image wins when its digest differs), and a
 * failed pull is an error only when the local store has no image of that name; a short name comes
 * from the local store, else a pull from the engine's default registry. Rejects with the engine's
 * own words.
 */
export async function pinImage(
  engine: ContainerEngine,
  ref: string,
  insecure: InsecureRegistries = [],
): Promise<PinnedImage> {
  const registry = registryOf(ref);
  const local = registry ? undefined : await inspectImage(engine, ref);
  if (local) return runnable(local);
  const tls = engine === 'podman' && registry && insecure.includes(registry) ? ['--tls-verify=false'] : [];
  let pullError: Error | undefined;
  await engineCommand(engine, ['pull', '--quiet', ...tls, ref]).catch((error: unknown) => {
    pullError = error as Error;
  });
  const pinned = await inspectImage(engine, ref);
  if (pinned) return runnable(pinned);
  throw pullError ?? new Error(`${engine} image inspect: image not known: ${ref}`);
}

/** The pin of an image this host can run: refuses another platform's image in its own words. */
function runnable({ platform, ...pinned }: InspectedImage): PinnedImage {
  if (platform !== HOST_PLATFORM)
    throw new Error(
      `${pinned.ref} is an image for ${platform}; this host runs ${HOST_PLATFORM} (build or pull it with --platform ${HOST_PLATFORM})`,
    );
  return pinned;
}

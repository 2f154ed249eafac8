import { readFile, stat } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { type RuntimeConfig } from '../config.js';
import { fileURLToPath } from 'node:url';
import { type Snapshot, SnapshotError, snapshotDirectory } from './artifact-snapshot.js';
import {
  type ContainerEngine,
  type ContainerEngineSetting,
  type InsecureRegistries,
  type PinnedImage,
  chooseContainerEngine,
  pinImage,
} from './container-engine.js';

/** How to start one worker for a runtime version. */
export type LaunchSpec =
  | { kind: 'process'; command: string; args: string[]; cwd: string; node: boolean }
  | { kind: 'image'; image: string; engine: ContainerEngine };

/** The artifact cannot be started; `message` is the CREATE_FAILED reason. */
export class ArtifactError extends Error {
  override name = 'ArtifactError';
}

const IMAGE_RE = /^[a-z0-9][a-z0-9._\-/:@]*$/i;

async function readJson(path: string): Promise<Record<string, unknown> | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return undefined; // absent: the caller falls back to the next source of the command
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    throw new ArtifactError(`${path} is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
}

/** What a version runs, fixed when it is created or updated. */
export type PinnedArtifact =
  | ({ kind: 'snapshot'; source: string } & Snapshot)
  | ({ kind: 'image'; engine: ContainerEngine } & PinnedImage);

/** Where a runtime keeps the `file://` snapshots of its versions. */
export const snapshotRootOf = (dataDir: string): string => join(dataDir, 'artifacts');

/** How this runtime pins artifacts, from its settings. */
export function pinOptionsOf(config: Readonly<RuntimeConfig>): PinOptions {
  return {
    engine: config.containerEngine,
    snapshotRoot: config.fileArtifacts === 'snapshot' ? snapshotRootOf(config.dataDir) : undefined,
    maxSnapshotBytes: config.artifactMaxMb * 2 ** 20,
    insecureRegistries: config.insecureRegistries,
  };
}

export interface PinOptions {
  engine: ContainerEngineSetting;
  /** Where `file://` directories are copied; undefined runs them in place (live, `agentrt dev`). */
  snapshotRoot?: string | undefined;
  /** The largest directory copied (AGENTRT_ARTIFACT_MAX_MB). */
  maxSnapshotBytes: number;
  insecureRegistries?: InsecureRegistries;
}

function directoryOf(containerUri: string): string {
  let dir: string;
  try {
    dir = fileURLToPath(containerUri);
  } catch (error) {
    throw new ArtifactError(
      `containerUri ${containerUri} is not a valid file:// URL of an absolute directory`,
      {
        cause: error,
      },
    );
  }
  if (!isAbsolute(dir))
    throw new ArtifactError(`containerUri ${containerUri} must name an absolute directory`);
  return dir;
}

/**
 * How to run a directory: `agentrt.json` `{"command": [...]}` first, else `node <package.json main>`.
 * `name` is how errors call it (the containerUri, or the snapshot of one).
 */
async function directoryLaunch(dir: string, name: string): Promise<LaunchSpec> {
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) throw new ArtifactError(`containerUri ${name}: ${dir} is not a directory`);
  const manifest = await readJson(join(dir, 'agentrt.json'));
  if (manifest) {
    const command = manifest.command;
    if (
      !Array.isArray(command) ||
      command.length === 0 ||
      !command.every((c) => typeof c === 'string' && c !== '')
    )
      throw new ArtifactError(`${join(dir, 'agentrt.json')}: "command" must be a non-empty array of strings`);
    const [first, ...args] = command as string[];
    const node = first === 'node';
    // "node" means the runtime's own Node, so a worker never picks up an older one from PATH.
    return { kind: 'process', command: node ? process.execPath : (first as string), args, cwd: dir, node };
  }
  const pkg = await readJson(join(dir, 'package.json'));
  if (pkg && typeof pkg.main === 'string' && pkg.main) {
    const main = join(dir, pkg.main);
    if (!(await stat(main).catch(() => undefined))?.isFile())
      throw new ArtifactError(`package.json main ${pkg.main} does not exist in ${dir} (build it first?)`);
    return { kind: 'process', command: process.execPath, args: [main], cwd: dir, node: true };
  }
  throw new ArtifactError(
    `${dir} has neither agentrt.json {"command": [...]} nor a package.json with "main"`,
  );
}

async function engineFor(containerUri: string, setting: ContainerEngineSetting): Promise<ContainerEngine> {
  if (!IMAGE_RE.test(containerUri))
    throw new ArtifactError(`containerUri ${containerUri} is neither file://<dir> nor an image reference`);
  try {
    return await chooseContainerEngine(setting);
  } catch (error) {
    throw new ArtifactError(
      `containerUri ${containerUri} is an image and needs a container engine (podman, or a Docker engine), but none answered (${(error as Error).message}). Use file://<absolute dir> to run a directory without one.`,
    );
  }
}

/**
 * Fixes what a new version runs: a `file://` directory is copied into the snapshot root (unless it
 * runs live: undefined), an image reference is pinned to the image it names now. Rejects with an
 * ArtifactError whose message is the CREATE_FAILED / UPDATE_FAILED reason.
 */
export async function pinArtifact(
  containerUri: string,
  options: PinOptions,
): Promise<PinnedArtifact | undefined> {
  if (containerUri.startsWith('file:')) {
    const source = directoryOf(containerUri);
    await directoryLaunch(source, containerUri);
    if (!options.snapshotRoot) return undefined;
    const snapshot = await snapshotDirectory(source, options.snapshotRoot, options.maxSnapshotBytes).catch(
      (error: unknown) => {
        if (error instanceof SnapshotError)
          throw new ArtifactError(`containerUri ${containerUri}: ${error.message}`);
        throw new ArtifactError(
          `containerUri ${containerUri}: cannot copy ${source}: ${(error as Error).message}`,
        );
      },
    );
    return { kind: 'snapshot', source, ...snapshot };
  }
  const engine = await engineFor(containerUri, options.engine);
  try {
    return { kind: 'image', engine, ...(await pinImage(engine, containerUri, options.insecureRegistries)) };
  } catch (error) {
    throw new ArtifactError(`containerUri ${containerUri}: ${(error as Error).message}`);
  }
}

/**
 * How to start a worker of a version: from its pin (no engine call, no copy), else — a directory
 * run live, or a version an older build made — from its containerUri as it reads now.
 */
export async function launchOf(
  containerUri: string,
  pin: PinnedArtifact | undefined,
  options: PinOptions,
): Promise<LaunchSpec> {
  if (pin?.kind === 'snapshot') return directoryLaunch(pin.dir, containerUri);
  if (pin?.kind === 'image') return { kind: 'image', image: pin.id, engine: pin.engine };
  if (containerUri.startsWith('file:')) return directoryLaunch(directoryOf(containerUri), containerUri);
  const pinned = await pinArtifact(containerUri, options);
  return launchOf(containerUri, pinned, options);
}

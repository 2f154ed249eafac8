import { readFile, stat } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ContainerEngine,
  type ContainerEngineSetting,
  chooseContainerEngine,
  ensureImage,
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

/**
 * Turns a `containerUri` into a launch spec. `file://<absolute dir>` runs the directory as the
 * container: `agentrt.json` `{"command": [...]}` first, else `node <package.json main>`. Any other
 * URI is an image: in the container engine's local store, else pulled from its registry.
 */
export async function resolveArtifact(
  containerUri: string,
  engineSetting: ContainerEngineSetting = 'auto',
): Promise<LaunchSpec> {
  if (containerUri.startsWith('file:')) {
    let dir: string;
    try {
      dir = fileURLToPath(containerUri);
    } catch (error) {
      throw new ArtifactError(
        `containerUri ${containerUri} is not a valid file:// URL of an absolute directory`,
        { cause: error },
      );
    }
    if (!isAbsolute(dir))
      throw new ArtifactError(`containerUri ${containerUri} must name an absolute directory`);
    const info = await stat(dir).catch(() => undefined);
    if (!info?.isDirectory())
      throw new ArtifactError(`containerUri ${containerUri}: ${dir} is not a directory`);
    const manifest = await readJson(join(dir, 'agentrt.json'));
    if (manifest) {
      const command = manifest.command;
      if (
        !Array.isArray(command) ||
        command.length === 0 ||
        !command.every((c) => typeof c === 'string' && c !== '')
      )
        throw new ArtifactError(
          `${join(dir, 'agentrt.json')}: "command" must be a non-empty array of strings`,
        );
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
  if (!IMAGE_RE.test(containerUri))
    throw new ArtifactError(`containerUri ${containerUri} is neither file://<dir> nor an image reference`);
  let engine: ContainerEngine;
  try {
    engine = await chooseContainerEngine(engineSetting);
  } catch (error) {
    throw new ArtifactError(
      `containerUri ${containerUri} is an image and needs a container engine (podman, or a Docker engine), but none answered (${(error as Error).message}). Use file://<absolute dir> to run a directory without one.`,
    );
  }
  try {
    await ensureImage(engine, containerUri);
  } catch (error) {
    throw new ArtifactError(`containerUri ${containerUri}: ${(error as Error).message}`);
  }
  return { kind: 'image', image: containerUri, engine };
}

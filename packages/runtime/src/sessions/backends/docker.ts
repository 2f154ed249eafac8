import { validationError } from '../../errors.js';
import { type SessionBackend } from '../backend.js';
import { HELPER_ENV, SECURE_PATH, fromRuntimeEnv, helperPath } from '../helpers.js';
import { freePort } from '@agentrt/kit';
import { WorkerStartError, spawnWorker } from '../worker.js';

/** What the worker's container gets from the runtime's environment handling, less what docker sets. */
const NOT_FORWARDED = new Set(['PATH', 'TMPDIR', 'HOME', 'PORT', 'HOST', 'AGENTRT_HOST']);
/** The docker client's own variables: how the operator reaches the engine. */
const DOCKER_CLIENT_VARIABLES = [
  'HOME',
  'DOCKER_HOST',
  'DOCKER_CONFIG',
  'DOCKER_CONTEXT',
  'DOCKER_CERT_PATH',
  'DOCKER_TLS_VERIFY',
];

/** The docker client's environment: HELPER_ENV and the operator's DOCKER_* settings, nothing of a tenant's. */
function dockerClientEnv(): Record<string, string> {
  return { ...HELPER_ENV, ...fromRuntimeEnv(DOCKER_CLIENT_VARIABLES) };
}

/** Image artifacts, each session a `docker run --rm --init` published on a loopback port. */
export function createDockerBackend(): SessionBackend {
  return {
    name: 'docker',
    async start({ id, launch, sessionDir, env: envFor, healthCheck, logger }) {
      if (launch.kind !== 'image') throw new Error(`the docker backend cannot run ${launch.kind}`);
      const docker = helperPath('docker');
      if (!docker) throw new WorkerStartError(`docker is not installed in ${SECURE_PATH}: ${launch.image}`);
      const port = await freePort();
      const envArgs = Object.entries(envFor(port, false))
        .filter(([name]) => !NOT_FORWARDED.has(name))
        .flatMap(([name, value]) => ['-e', `${name}=${value}`]);
      const argv = [docker, 'run', '--rm', '--init', '-p', `127.0.0.1:${port}:8080`, '-e', 'PORT=8080'];
      const worker = spawnWorker({
        id,
        argv: [...argv, ...envArgs, launch.image],
        cwd: sessionDir,
        env: {},
        helperEnv: dockerClientEnv(),
        port,
        healthCheck,
        logger,
      });
      return {
        worker,
        exec: () => {
          throw validationError(
            'command',
            'sessions of container images cannot run commands here (only file:// artifacts)',
          );
        },
      };
    },
  };
}

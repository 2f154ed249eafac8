import { type SessionBackend } from '../backend.js';
import { type Isolation, isolate } from '../isolation.js';
import { freePort } from '@agentrt/kit';
import { spawnWorker } from '../worker.js';

/**
 * Workers as process groups of the runtime's own user (AGENTRT_ISOLATION=none / unsafe-process, or
 * no usable sandbox): their own group, folder and loopback port, nothing more.
 */
export function createProcessGroupBackend(isolation: Isolation): SessionBackend {
  return {
    name: 'process-group',
    async start({ id, launch, env: envFor, healthCheck, logger, output }) {
      if (launch.kind !== 'process') throw new Error(`the process-group backend cannot run ${launch.kind}`);
      const port = await freePort();
      const env = envFor(port, false);
      const worker = spawnWorker({
        id,
        argv: isolate(isolation, [launch.command, ...launch.args]),
        cwd: launch.cwd,
        env,
        port,
        healthCheck,
        logger,
        output,
      });
      return {
        worker,
        exec: (argv) => ({
          argv: isolate(isolation, argv),
          cwd: launch.cwd,
          env: { ...env },
          cgroup: undefined,
        }),
      };
    },
  };
}

// The test kubelet's container runtime: a bubblewrap sandbox per pod where this machine has one
// (as a gVisor or Kata node isolates each pod), else process groups.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveRuntimeConfig } from '../../config.js';
import { type SessionBackend } from '../../sessions/backend.js';
import { createBwrapBackend } from '../../sessions/backends/bwrap.js';
import { createProcessGroupBackend } from '../../sessions/backends/process-group.js';
import { type Isolation, detectIsolation } from '../../sessions/isolation.js';

/** The node's container runtime: a bubblewrap sandbox per pod where this machine has one, else process groups. */
export function nodeBackend(): SessionBackend {
  const dataDir = mkdtempSync(join(tmpdir(), 'agentrt-node-'));
  try {
    const isolation = detectIsolation({ setting: 'auto', sandboxIds: { uid: 65534, gid: 65534 } });
    if (isolation.mode === 'bwrap') {
      const config = resolveRuntimeConfig({ dataDir }, {});
      return createBwrapBackend({
        config,
        isolation: { ...isolation, network: 'allowlist-only' },
        instrumentPath: () => undefined,
      });
    }
  } catch {
    // root without a sandbox: process groups
  }
  return createProcessGroupBackend(PROCESS_GROUP);
}

const PROCESS_GROUP: Isolation = {
  mode: 'process-group',
  network: 'shared',
  reason: 'test kubelet',
  off: [],
  pdeathsig: false,
  hostIds: undefined,
  cgroups: undefined,
};

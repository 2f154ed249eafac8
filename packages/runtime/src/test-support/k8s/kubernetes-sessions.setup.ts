// Vitest setup of the `kubernetes` project: each test file gets its own test API server and test
// kubelet (sessions' pods run as process-group workers), and the runtimes it starts run their
// sessions on them (AGENTRT_SESSIONS=kubernetes, KUBECONFIG). The suites themselves are unchanged.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { startKubeApiServer } from './api-server.js';
import { nodeBackend, startKubelet } from './kubelet.js';
import { writeKubeconfig } from './kubeconfig.js';

const api = await startKubeApiServer();
const kubeconfig = writeKubeconfig(api.url);
const kubelet = await startKubelet({
  api,
  kubeconfig,
  dataDir: mkdtempSync(join(tmpdir(), 'agentrt-kubelet-')),
  backend: nodeBackend(),
});
process.env.KUBECONFIG = kubeconfig;
process.env.AGENTRT_SESSIONS = 'kubernetes';

afterAll(async () => {
  await kubelet.close();
  await api.close();
});

// Vitest setup of the `kubernetes` projects: each test file gets its own test API server and test
// kubelet (sessions' pods run as process-group workers), and the runtimes it starts run their
// sessions on them (AGENTRT_SESSIONS=kubernetes, KUBECONFIG). With AGENTRT_K8S_MODE=agent-sandbox
// (the project `kubernetes (agent-sandbox)`) the agent-sandbox CRDs are created from deploy/k8s and
// the test agent-sandbox controller reconciles the runtime's claims. The suites are unchanged.
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
import { startKubeApiServer } from './api-server.js';
import { startKubelet } from './kubelet.js';
import { nodeBackend } from './node-backend.js';
import { writeKubeconfig } from './kubeconfig.js';
import { startSandboxController } from './sandbox-controller.js';

const CRDS = fileURLToPath(new URL('../../../../../deploy/k8s/crds/', import.meta.url));

const api = await startKubeApiServer();
const kubeconfig = writeKubeconfig(api.url);
const kubelet = await startKubelet({
  api,
  kubeconfig,
  dataDir: mkdtempSync(join(tmpdir(), 'agentrt-kubelet-')),
  backend: nodeBackend(),
});
const agentSandbox = process.env.AGENTRT_K8S_MODE === 'agent-sandbox';
if (agentSandbox)
  for (const file of readdirSync(CRDS).filter((f) => f.includes('agents.x-k8s.io')))
    api.applyYaml(join(CRDS, file));
const controller = agentSandbox ? await startSandboxController({ kubeconfig }) : undefined;
process.env.KUBECONFIG = kubeconfig;
process.env.AGENTRT_SESSIONS = 'kubernetes';

afterAll(async () => {
  await controller?.close();
  await kubelet.close();
  await api.close();
});

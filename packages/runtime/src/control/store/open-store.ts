import { KubeConfig } from '@kubernetes/client-node';
import { type RuntimeConfig } from '../../config.js';
import { type Logger } from '../../logger.js';
import { type Store } from '../store.js';
import { createKubernetesStore } from './kubernetes-store.js';
import { createSqliteStore } from './sqlite-store.js';

/** The cluster's client configuration: the configured kubeconfig, else KUBECONFIG, ~/.kube/config or in-cluster. */
export function kubeConfigOf(config: Pick<Readonly<RuntimeConfig>, 'kubeconfig'>): KubeConfig {
  const kubeConfig = new KubeConfig();
  if (config.kubeconfig) kubeConfig.loadFromFile(config.kubeconfig);
  else kubeConfig.loadFromDefault();
  return kubeConfig;
}

/** The control store the configuration names (`AGENTRT_CONTROL_STORE`), ready to read. */
export async function openControlStore(config: Readonly<RuntimeConfig>, logger: Logger): Promise<Store> {
  if (config.controlStore === 'sqlite') return createSqliteStore(config.dataDir);
  return createKubernetesStore({
    kubeConfig: kubeConfigOf(config),
    namespace: config.kubernetesNamespace,
    logger: logger.child({ component: 'control-store' }),
  });
}

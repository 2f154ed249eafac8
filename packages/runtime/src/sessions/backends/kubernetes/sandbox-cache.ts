// agent-sandbox mode's view of the cluster: informers (list, then watch from the resourceVersion)
// of the SandboxClaims agentrt made and of the Sandboxes in its namespace, so a session's claim, the
// sandbox it adopted and that sandbox's pod are read from memory, never polled. A cut watch is
// resumed; a 410 relists (informer-cache.ts).
import { CustomObjectsApi, type KubeConfig, makeInformer } from '@kubernetes/client-node';
import { type Logger } from '../../../logger.js';
import { type InformerCache, createInformerCache } from './informer-cache.js';
import { LABELS, MANAGED_BY } from './pod-spec.js';
import { EXTENSIONS_GROUP, SANDBOX_GROUP, SANDBOX_VERSION, type SandboxObject } from './sandbox-spec.js';

export type ObjectCache = InformerCache<SandboxObject>;

interface Kind {
  group: string;
  plural: string;
  labelSelector?: string;
}

function createObjectCache(kc: KubeConfig, namespace: string, kind: Kind, logger: Logger): ObjectCache {
  const api = kc.makeApiClient(CustomObjectsApi);
  const { group, plural, labelSelector } = kind;
  const list = () =>
    api.listNamespacedCustomObject({ group, version: SANDBOX_VERSION, namespace, plural, labelSelector });
  const path = `/apis/${group}/${SANDBOX_VERSION}/namespaces/${namespace}/${plural}`;
  const informer = makeInformer<SandboxObject>(kc, path, list as never, labelSelector);
  return createInformerCache(informer, { namespace, logger, what: plural });
}

export interface SandboxCache {
  /** The SandboxClaims agentrt made (label app.kubernetes.io/managed-by=agentrt). */
  claims: ObjectCache;
  /** Every Sandbox of the namespace: warm-pool members and those claims adopted or made. */
  sandboxes: ObjectCache;
  ready(): Promise<void>;
  close(): Promise<void>;
}

export function createSandboxCache(kc: KubeConfig, namespace: string, logger: Logger): SandboxCache {
  const managed = `${LABELS.managedBy}=${MANAGED_BY}`;
  const claims = createObjectCache(
    kc,
    namespace,
    { group: EXTENSIONS_GROUP, plural: 'sandboxclaims', labelSelector: managed },
    logger,
  );
  const sandboxes = createObjectCache(kc, namespace, { group: SANDBOX_GROUP, plural: 'sandboxes' }, logger);
  return {
    claims,
    sandboxes,
    ready: () => Promise.all([claims.ready(), sandboxes.ready()]).then(() => undefined),
    close: () => Promise.all([claims.close(), sandboxes.close()]).then(() => undefined),
  };
}

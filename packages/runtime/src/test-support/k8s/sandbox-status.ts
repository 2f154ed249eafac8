// What the test agent-sandbox controller computes as the real one does at
// kubernetes-sigs/agent-sandbox@2fd412d55ecae90861a101a5424a75473de97c36: a Sandbox's Ready and
// Finished conditions from its pod (sandbox_controller.go), meta.SetStatusCondition's transition
// times, the blueprint a template gives a Sandbox (utils.go secure defaults), and owner references.
import { type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import { SANDBOX_VERSION, type SandboxObject } from '../../sessions/backends/kubernetes/sandbox-spec.js';

export interface Condition {
  type: string;
  status: 'True' | 'False';
  reason: string;
  message: string;
  observedGeneration?: number;
}

export const controllerOf = (o: KubernetesObject) => o.metadata?.ownerReferences?.find((r) => r.controller);
export const ownerRef = (kind: string, group: string, o: SandboxObject) => ({
  apiVersion: `${group}/${SANDBOX_VERSION}`,
  kind,
  name: o.metadata.name,
  uid: o.metadata.uid as string,
  controller: true,
  blockOwnerDeletion: true,
});
export const keyOf = (o: KubernetesObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
export const isTrue = (o: SandboxObject | undefined, type: string) =>
  o?.status?.conditions?.some((c) => c.type === type && c.status === 'True') === true;
export const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** sandbox_controller.go computeReadyCondition, for a sandbox without a Service. */
export function sandboxReady(sandbox: SandboxObject, pod: V1Pod | undefined): Condition {
  const base = {
    type: 'Ready',
    observedGeneration: (sandbox.metadata as { generation?: number }).generation,
  };
  const phase = pod?.status?.phase;
  if (phase === 'Succeeded')
    return { ...base, status: 'False', reason: 'PodSucceeded', message: 'Pod completed successfully' };
  if (phase === 'Failed') return { ...base, status: 'False', reason: 'PodFailed', message: 'Pod failed' };
  if (!pod)
    return { ...base, status: 'False', reason: 'DependenciesNotReady', message: 'Pod does not exist' };
  if (phase !== 'Running')
    return {
      ...base,
      status: 'False',
      reason: 'DependenciesNotReady',
      message: `Pod exists with phase: ${phase ?? ''}`,
    };
  const ready = pod.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  if (!ready)
    return {
      ...base,
      status: 'False',
      reason: 'DependenciesNotReady',
      message: 'Pod is Running but not Ready',
    };
  if (!pod.status?.podIPs?.length)
    return {
      ...base,
      status: 'False',
      reason: 'DependenciesNotReady',
      message: 'Pod is Ready but has no podIPs yet',
    };
  return { ...base, status: 'True', reason: 'DependenciesReady', message: 'Pod is Ready' };
}

/** sandbox_controller.go computeFinishedCondition: present only while the pod is terminal. */
export function sandboxFinished(pod: V1Pod | undefined): Condition | undefined {
  const phase = pod?.status?.phase;
  if (phase === 'Succeeded')
    return {
      type: 'Finished',
      status: 'True',
      reason: 'PodSucceeded',
      message: 'Pod completed successfully',
    };
  if (phase === 'Failed')
    return { type: 'Finished', status: 'True', reason: 'PodFailed', message: 'Pod failed' };
  return undefined;
}

/** meta.SetStatusCondition: lastTransitionTime moves only when the status changes. */
export function setConditions(
  old: Condition[] = [],
  next: Condition[],
): (Condition & { lastTransitionTime: string })[] {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return next.map((c) => {
    const before = old.find((o) => o.type === c.type) as
      (Condition & { lastTransitionTime?: string }) | undefined;
    return {
      ...c,
      lastTransitionTime:
        before?.status === c.status && before.lastTransitionTime ? before.lastTransitionTime : now,
    };
  });
}

/** The template's shared blueprint as a Sandbox spec, with utils.go ApplySandboxSecureDefaults. */
export function blueprintOf(
  template: SandboxObject,
  labels: Record<string, string>,
): Record<string, unknown> {
  const spec = structuredClone(template.spec ?? {}) as {
    podTemplate?: {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec?: Record<string, unknown>;
    };
    volumeClaimTemplates?: unknown;
    service?: unknown;
  };
  const podTemplate = spec.podTemplate ?? {};
  const podSpec = { ...podTemplate.spec };
  podSpec.automountServiceAccountToken ??= false;
  return {
    podTemplate: {
      metadata: { ...podTemplate.metadata, labels: { ...podTemplate.metadata?.labels, ...labels } },
      spec: podSpec,
    },
    ...(spec.volumeClaimTemplates ? { volumeClaimTemplates: spec.volumeClaimTemplates } : {}),
    ...(spec.service !== undefined ? { service: spec.service } : {}),
  };
}

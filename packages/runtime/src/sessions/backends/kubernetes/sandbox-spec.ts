// agent-sandbox mode's objects (kubernetes-sigs/agent-sandbox, extensions.agents.x-k8s.io/v1beta1):
// a SandboxTemplate and a SandboxWarmPool per runtime version, a SandboxClaim per session. The
// template's pod is pods mode's pod (pod-spec.ts) with no session in it: the same container,
// limits and hardening, so a warm-pool sandbox can serve any session of the version.
// Names, labels and annotations the controller writes are those of agent-sandbox@2fd412d
// (api/v1beta1/sandbox_types.go, extensions/api/v1beta1/*_types.go).
import { type V1OwnerReference } from '@kubernetes/client-node';
import { type SessionTarget, sessionStorageMount } from '../../backend.js';
import {
  ANNOTATIONS,
  LABELS,
  type PodSettings,
  STORAGE_VOLUME,
  type SessionPodInput,
  labelValue,
  objectName,
  sessionHash,
  sessionPod,
  sessionStorageClaim,
  versionLabels,
} from './pod-spec.js';
import { sessionNetworkPolicy } from './network-policy.js';

export const SANDBOX_GROUP = 'agents.x-k8s.io';
export const EXTENSIONS_GROUP = 'extensions.agents.x-k8s.io';
export const SANDBOX_VERSION = 'v1beta1';

/** What the agent-sandbox controller writes on its objects (sandbox_types.go, sandboxclaim_types.go). */
export const SANDBOX_KEYS = {
  /** Sandbox annotation: the pod serving it (a warm-pool sandbox's pod keeps its own name). */
  podName: 'agents.x-k8s.io/pod-name',
  /** Sandbox label: `warm` when a claim adopted it from a pool, `cold` when made for the claim. */
  launchType: 'agents.x-k8s.io/launch-type',
  /** Sandbox label: NameHash(pool name) while it is an unclaimed warm-pool member. */
  warmPool: 'agents.x-k8s.io/warm-pool-sandbox',
  templateRefHash: 'agents.x-k8s.io/sandbox-template-ref-hash',
  templateRef: 'agents.x-k8s.io/sandbox-template-ref',
  /** Pod label: NameHash(sandbox name), the controller's tracking label. */
  nameHash: 'agents.x-k8s.io/sandbox-name-hash',
  /** Sandbox and pod label: the uid of the claim it serves. */
  claimUid: 'agents.x-k8s.io/claim-uid',
  /** Claim annotation: the sandbox it adopted. */
  sandboxName: 'agents.x-k8s.io/sandbox-name',
} as const;

/** The controller's NameHash: FNV-1a (32 bit) of the name as 8 hex digits (controllers/sandbox_controller.go). */
export function nameHash(name: string): string {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(name, 'utf8')) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

export const templateName = (target: SessionTarget) =>
  objectName('agentrt-t', [target.runtime.id, String(target.version.version)]);
export const warmPoolName = (target: SessionTarget) =>
  objectName('agentrt-p', [target.runtime.id, String(target.version.version)]);
export const claimName = (runtimeId: string, sessionId: string) =>
  objectName('agentrt-c', [runtimeId, sessionId]);

/** The label selector of every template or pool of a runtime (`keep`: but that version's). */
export function runtimeSelector(runtimeId: string, keep?: number): string {
  const runtime = `${LABELS.runtime}=${labelValue(runtimeId)}`;
  return keep === undefined ? runtime : `${runtime},${LABELS.version}!=${keep}`;
}

/** A custom object as the API takes it (client-node's CustomObjectsApi sends it as is). */
export interface SandboxObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
    uid?: string;
    creationTimestamp?: Date;
    deletionTimestamp?: Date;
    ownerReferences?: V1OwnerReference[];
  };
  spec?: Record<string, unknown>;
  status?: {
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    podIPs?: string[];
    sandbox?: { name?: string; podIPs?: string[] };
    readyReplicas?: number;
  };
}

const extensionsKind = (kind: string) => ({ apiVersion: `${EXTENSIONS_GROUP}/${SANDBOX_VERSION}`, kind });

/** The pods mode NetworkPolicy's rules in the template's `networkPolicy` (wire form: `from`, not `_from`). */
function networkPolicyOf(target: SessionTarget, settings: PodSettings): Record<string, unknown> {
  const { ingress, egress } = sessionNetworkPolicy(target, settings).spec ?? {};
  return { ingress: ingress?.map(({ _from, ...rule }) => ({ ...rule, from: _from })), egress };
}

/**
 * The version's SandboxTemplate: pods mode's pod for the version with no session or replica in it
 * (a warm sandbox serves whichever session claims it, from any replica), agentrt's NetworkPolicy
 * rules (Managed: the controller makes one policy per template), no env injection by claims.
 */
export function sandboxTemplate(input: Omit<SessionPodInput, 'for'>): SandboxObject {
  const { target, settings } = input;
  const pod = sessionPod({
    ...input,
    settings: { ...settings, replica: undefined },
    for: { kind: 'warm', slot: 0 },
  });
  const labels = { ...pod.metadata?.labels };
  delete labels[LABELS.pool];
  delete labels[LABELS.slot];
  // The pod spec's client-node names are its wire names (none of its fields is a reserved word).
  const spec = pod.spec as unknown as Record<string, unknown>;
  // sessionStorage: the container mounts the volume each claim's volumeClaimTemplate brings.
  const mountPath = sessionStorageMount(target);
  if (mountPath) pod.spec?.containers[0]?.volumeMounts?.push({ name: STORAGE_VOLUME, mountPath });
  return {
    ...extensionsKind('SandboxTemplate'),
    metadata: { name: templateName(target), namespace: settings.namespace, labels: versionLabels(target) },
    spec: {
      podTemplate: { metadata: { labels, annotations: pod.metadata?.annotations ?? {} }, spec },
      networkPolicy: networkPolicyOf(target, settings),
      networkPolicyManagement: 'Managed',
      envVarsInjectionPolicy: 'Disallowed',
      volumeClaimTemplatesPolicy: mountPath ? 'Allowed' : 'Disallowed',
    },
  };
}

/** The version's SandboxWarmPool of `replicas` warm sandboxes from its template. */
export function sandboxWarmPool(
  target: SessionTarget,
  settings: PodSettings,
  replicas: number,
): SandboxObject {
  return {
    ...extensionsKind('SandboxWarmPool'),
    metadata: { name: warmPoolName(target), namespace: settings.namespace, labels: versionLabels(target) },
    spec: { replicas, sandboxTemplateRef: { name: templateName(target) } },
  };
}

/**
 * A session's SandboxClaim on its version's pool: labelled by runtime, version and session hash
 * (the id itself in an annotation), shut down by the controller at the version's max lifetime
 * should agentrt not have stopped it by then.
 */
export function sandboxClaim(
  target: SessionTarget,
  sessionId: string,
  settings: PodSettings,
  name = claimName(target.runtime.id, sessionId),
): SandboxObject {
  const labels: Record<string, string> = {
    ...versionLabels(target),
    [LABELS.component]: 'session-claim',
    [LABELS.sessionHash]: sessionHash(sessionId),
  };
  if (settings.replica) labels[LABELS.replica] = labelValue(settings.replica);
  const maxLifetimeMs = target.version.config.lifecycleConfiguration.maxLifetime * 1000;
  return {
    ...extensionsKind('SandboxClaim'),
    metadata: {
      name,
      namespace: settings.namespace,
      labels,
      annotations: {
        [ANNOTATIONS.sessionId]: sessionId,
        [ANNOTATIONS.runtimeArn]: target.runtime.arn,
        // The Lease holder's reaper stops the session on them (the CRDs have no idle timeout).
        [ANNOTATIONS.idleTimeoutS]: String(
          target.version.config.lifecycleConfiguration.idleRuntimeSessionTimeout,
        ),
        [ANNOTATIONS.maxLifetimeS]: String(target.version.config.lifecycleConfiguration.maxLifetime),
      },
    },
    spec: {
      warmPoolRef: { name: warmPoolName(target) },
      lifecycle: {
        shutdownTime: new Date(Date.now() + maxLifetimeMs).toISOString().replace(/\.\d+Z$/, 'Z'),
        shutdownPolicy: 'Delete',
      },
      ...(sessionStorageMount(target)
        ? { volumeClaimTemplates: [storageClaimTemplate(target, sessionId, settings)] }
        : {}),
    },
  };
}

/**
 * A storage version's claim brings the session's storage as a volumeClaimTemplate (which makes the
 * controller start it cold, as the local backends and pods mode start storage sessions): pods
 * mode's claim for the session, named for the pod volume. The controller makes the PVC
 * `session-storage-<sandbox>` from it, owned by the sandbox; stop keeps it (see storageClaimOf).
 */
function storageClaimTemplate(target: SessionTarget, sessionId: string, settings: PodSettings) {
  const { metadata, spec } = sessionStorageClaim(target, sessionId, settings);
  const { labels, annotations } = metadata ?? {};
  return { metadata: { name: STORAGE_VOLUME, labels, annotations }, spec };
}

/**
 * The PVC the controller made from a claim's storage volumeClaimTemplate (upstream names it
 * `<template>-<sandbox>`; a storage claim's sandbox is cold, named as the claim), or none when the
 * claim brings no storage.
 */
export function storageClaimOf(claim: SandboxObject | undefined): string | undefined {
  const templates = claim?.spec?.volumeClaimTemplates as { metadata?: { name?: string } }[] | undefined;
  const storage = templates?.find((t) => t.metadata?.name === STORAGE_VOLUME);
  return storage && claim ? sandboxStorageName(claim.metadata.name) : undefined;
}

/** The PVC the controller makes for the storage of the claim (and cold sandbox) `claim`. */
export const sandboxStorageName = (claim: string): string => `${STORAGE_VOLUME}-${claim}`;

/** The object's condition `type` is True. */
export const conditionTrue = (object: SandboxObject | undefined, type: string): boolean =>
  object?.status?.conditions?.some((c) => c.type === type && c.status === 'True') === true;

import { createHash } from 'node:crypto';
import type {
  V1Container,
  V1OwnerReference,
  V1PersistentVolumeClaim,
  V1Pod,
  V1Probe,
  V1Toleration,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import { type RuntimeConfig } from '../../../config.js';
import { type SessionTarget, sessionStorageMount } from '../../backend.js';

/** The port an agent's container listens on (the container contract, as on the local engines). */
export const POD_PORT = 8080;
/** The user and group a session's container runs as, whatever its image says (as on podman). */
export const POD_USER = 65534;

/** Label keys every object made for a session carries; selectors and the router's cache use them. */
export const LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  component: 'app.kubernetes.io/component',
  runtime: 'agentrt.dev/runtime',
  version: 'agentrt.dev/version',
  sessionHash: 'agentrt.dev/session-hash',
  /** `warm` on an unclaimed warm-pool pod; a claim removes it in the same patch that adds sessionHash. */
  pool: 'agentrt.dev/pool',
  slot: 'agentrt.dev/slot',
  /** The runtime process (replica incarnation) that made the pod: its pods are reaped once it is gone. */
  replica: 'agentrt.dev/replica',
} as const;
/** Annotations: values a label cannot hold (any characters), read back by a reconcile. */
export const ANNOTATIONS = {
  sessionId: 'agentrt.dev/session-id',
  runtimeArn: 'agentrt.dev/runtime-arn',
  /** The version's idleRuntimeSessionTimeout and maxLifetime (seconds): the leader's reaper reads them. */
  idleTimeoutS: 'agentrt.dev/idle-timeout-s',
  maxLifetimeS: 'agentrt.dev/max-lifetime-s',
  /** When a warm pod became a session's (epoch ms): its lifetime counts from then. */
  claimedAtMs: 'agentrt.dev/claimed-at-ms',
  /** The session's last invocation as a replica serving it wrote it (epoch ms; see `touch`). */
  lastActivityMs: 'agentrt.dev/last-activity-ms',
  /** A session-storage claim's last use: its session's last start on its version (epoch ms). */
  storageUsedMs: 'agentrt.dev/storage-used-ms',
} as const;
export const MANAGED_BY = 'agentrt';

/** How the operator wants session pods made; `podSettingsOf` fills it from the runtime's config. */
export interface PodSettings {
  namespace: string;
  /** e.g. `gvisor` or `kata`: the pod's isolation; unset, the cluster's default runtime. */
  runtimeClassName?: string | undefined;
  /** Limits of the session's container, and what it requests of a node (at most its limits). */
  limits: { cpuMillis: number; memoryMb: number; scratchMb: number };
  requests: { cpuMillis: number; memoryMb: number };
  /** Size and class of a session's storage claim (versions with sessionStorage). */
  storageMb: number;
  storageClassName?: string | undefined;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** Labels of the runtime's own pods: the only peers a session takes connections from. */
  runtimeSelector: Record<string, string>;
  /** Ports of the runtime's pods a session may connect to (its telemetry relay, allowlisted services). */
  runtimePorts: number[];
  /** Namespace of the cluster DNS (kube-dns / CoreDNS pods labelled `k8s-app: kube-dns`). */
  dnsNamespace: string;
  nodeSelector?: Record<string, string> | undefined;
  tolerations?: V1Toleration[] | undefined;
  /** Seconds between SIGTERM and SIGKILL when a session's pod is deleted. */
  terminationGraceSeconds: number;
  /** The runtime process making the pods (label agentrt.dev/replica; see control/orphan-reaper.ts). */
  replica?: string | undefined;
}

/** Defaults from the runtime's session limits: the same memory, CPUs, scratch and storage sizes. */
export function podSettingsOf(
  config: Pick<
    Readonly<RuntimeConfig>,
    'sessionMemoryMb' | 'sessionVcpus' | 'sessionDiskMb' | 'sessionStorageMb'
  > &
    Partial<Pick<Readonly<RuntimeConfig>, 'replicaInstance'>>,
  overrides: Partial<PodSettings> = {},
): PodSettings {
  const cpuMillis = Math.round(config.sessionVcpus * 1000);
  return {
    namespace: 'default',
    limits: { cpuMillis, memoryMb: config.sessionMemoryMb, scratchMb: config.sessionDiskMb },
    // A session idles most of its life: it asks a node for a tenth of its limits (at least 50m / 64Mi).
    requests: {
      cpuMillis: Math.min(cpuMillis, Math.max(50, Math.round(cpuMillis / 10))),
      memoryMb: Math.min(config.sessionMemoryMb, Math.max(64, Math.round(config.sessionMemoryMb / 10))),
    },
    storageMb: config.sessionStorageMb,
    imagePullPolicy: 'IfNotPresent',
    runtimeSelector: { 'app.kubernetes.io/name': 'agentrt-runtime' },
    runtimePorts: [4318],
    dnsNamespace: 'kube-system',
    terminationGraceSeconds: 5,
    replica: config.replicaInstance,
    ...overrides,
  };
}

// ---------------------------------------------------------------------------------------------
// Names and label values. A session id is up to 256 characters of letters, digits and `._:@=+/-`
// and a runtime id is the tenant's name plus a suffix: neither is a DNS-1123 name, so objects are
// named by hashes, and labels carry a value only when it is a valid label value as given.

const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** `chars` hex characters of the SHA-256 of `parts` joined by NUL (no part can fake a boundary). */
function hashOf(parts: readonly string[], chars: number): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, chars);
}

/** The label value of the session-hash label: 128 bits of the session id's SHA-256, lower-case hex. */
export function sessionHash(sessionId: string): string {
  return hashOf([sessionId], 32);
}

/** `value` when it is a valid label value, else `h-` and a hash of it (same input, same value). */
export function labelValue(value: string): string {
  return LABEL_VALUE.test(value) ? value : `h-${hashOf([value], 40)}`;
}

/** A DNS-1123 label made from `prefix` and a hash of `parts`: lower-case, ≤ 63 characters. */
export function objectName(prefix: string, parts: readonly string[]): string {
  return `${prefix}-${hashOf(parts, 32)}`;
}

/** The pod of one session of one runtime (session ids are per runtime, so the name hashes both). */
export function sessionPodName(runtimeId: string, sessionId: string): string {
  return objectName('agentrt-s', [runtimeId, sessionId]);
}

/** The pod of one warm-pool slot of a runtime version (its name keeps it once claimed). */
export function warmPodName(runtimeId: string, version: number, slot: number): string {
  return objectName('agentrt-w', [runtimeId, String(version), String(slot)]);
}

/**
 * The session's storage claim: one per (runtime, version, session), kept across stops while the
 * version is kept (storage-reaper.ts): the session's first start on a new version gets an empty one.
 */
export function storageClaimName(runtimeId: string, version: number, sessionId: string): string {
  return objectName('agentrt-st', [runtimeId, String(version), sessionId]);
}

/** The NetworkPolicy every pod of a runtime version is under. */
export function networkPolicyName(runtimeId: string, version: number): string {
  return objectName('agentrt-np', [runtimeId, String(version)]);
}

/** Labels of every pod (and policy, and claim) of a runtime version. */
export function versionLabels(target: SessionTarget): Record<string, string> {
  return {
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.runtime]: labelValue(target.runtime.id),
    [LABELS.version]: String(target.version.version),
  };
}

/** The label selector (`k=v,…`) of one session's pod: what `kubectl get pods -l` takes. */
export function sessionSelector(runtimeId: string, sessionId: string): string {
  return `${LABELS.runtime}=${labelValue(runtimeId)},${LABELS.sessionHash}=${sessionHash(sessionId)}`;
}

// ---------------------------------------------------------------------------------------------
// The objects, as @kubernetes/client-node models: its APIs (and `dumpYaml`) serialize them to the
// wire form, which differs where a field name is reserved in TypeScript (`_from` is `from`).

/** Whom a pod is for: a session known at start, or a warm-pool slot claimed later by a label patch. */
export type PodFor = { kind: 'session'; sessionId: string } | { kind: 'warm'; slot: number };

export interface SessionPodInput {
  target: SessionTarget;
  for: PodFor;
  /** The worker's environment as the session manager built it for port POD_PORT (see containerEnv). */
  env: Record<string, string>;
  /** `/ping` for HTTP, A2A and AG-UI agents; a TCP connect for MCP ones. */
  healthCheck: 'ping' | 'connect';
  settings: PodSettings;
  /** The object whose deletion deletes the pod (e.g. the AgentRuntime custom resource). */
  owner?: V1OwnerReference | undefined;
}

/** Thrown when a version cannot be expressed as a pod; the message names the field. */
export class PodSpecError extends Error {
  override name = 'PodSpecError';
}

/**
 * The image a version's pods run: the manifest digest it was pinned to at create time when the
 * engine knew one (`repo@sha256:…`, what a tag names later does not matter), else its containerUri.
 */
export function imageOf(target: SessionTarget): string {
  const uri = target.version.config.agentRuntimeArtifact.containerConfiguration?.containerUri;
  const pin = target.version.artifact;
  if (pin?.kind === 'image' && pin.digest) return `${repositoryOf(pin.ref)}@${pin.digest}`;
  if (!uri) throw new PodSpecError('agentRuntimeArtifact.containerConfiguration.containerUri is required');
  return uri;
}

/** A reference without its tag or digest: `host:5000/a/b:tag@sha256:…` → `host:5000/a/b`. */
function repositoryOf(ref: string): string {
  const bare = ref.split('@')[0] as string;
  const slash = bare.lastIndexOf('/');
  const colon = bare.lastIndexOf(':');
  return colon > slash ? bare.slice(0, colon) : bare;
}

/** Kubernetes quantities: CPU in millicores, sizes in mebibytes. */
const cpu = (millis: number) => `${millis}m`;
const mebibytes = (mb: number) => `${mb}Mi`;

function probeOf(healthCheck: 'ping' | 'connect'): V1Probe {
  const action =
    healthCheck === 'ping'
      ? { httpGet: { path: '/ping', port: POD_PORT } }
      : { tcpSocket: { port: POD_PORT } };
  return { ...action, periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 3, successThreshold: 1 };
}

/** The pod volume of a session's storage claim (in agent-sandbox mode, its volumeClaimTemplate). */
export const STORAGE_VOLUME = 'session-storage';

/** /tmp (the container's home and temp folder) and, for sessionStorage, the session's claim. */
function volumesOf(input: SessionPodInput): { volumes: V1Volume[]; mounts: V1VolumeMount[] } {
  const { target, settings } = input;
  const volumes: V1Volume[] = [
    { name: 'tmp', emptyDir: { sizeLimit: mebibytes(settings.limits.scratchMb) } },
  ];
  const mounts: V1VolumeMount[] = [{ name: 'tmp', mountPath: '/tmp' }];
  const mountPath = sessionStorageMount(target);
  // A warm pod is made before its session is known: storage versions start cold (as on the local backends).
  if (mountPath && input.for.kind === 'session') {
    const claimName = storageClaimName(target.runtime.id, target.version.version, input.for.sessionId);
    volumes.push({ name: STORAGE_VOLUME, persistentVolumeClaim: { claimName } });
    mounts.push({ name: STORAGE_VOLUME, mountPath });
  }
  return { volumes, mounts };
}

function containerOf(input: SessionPodInput, mounts: V1VolumeMount[]): V1Container {
  const { settings } = input;
  const { limits, requests } = settings;
  return {
    name: 'agent',
    image: imageOf(input.target),
    imagePullPolicy: settings.imagePullPolicy,
    ports: [{ name: 'http', containerPort: POD_PORT, protocol: 'TCP' }],
    env: Object.entries(input.env)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, value]) => ({ name, value })),
    resources: {
      limits: {
        cpu: cpu(limits.cpuMillis),
        memory: mebibytes(limits.memoryMb),
        'ephemeral-storage': mebibytes(limits.scratchMb),
      },
      requests: {
        cpu: cpu(Math.min(requests.cpuMillis, limits.cpuMillis)),
        memory: mebibytes(Math.min(requests.memoryMb, limits.memoryMb)),
      },
    },
    securityContext: {
      runAsNonRoot: true,
      runAsUser: POD_USER,
      runAsGroup: POD_USER,
      allowPrivilegeEscalation: false,
      privileged: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
    readinessProbe: probeOf(input.healthCheck),
    volumeMounts: mounts,
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
}

/** Labels and annotations of a session's or a warm slot's pod. */
function podMetadata(input: SessionPodInput) {
  const { target } = input;
  const labels: Record<string, string> = { ...versionLabels(target), [LABELS.component]: 'session' };
  if (input.settings.replica) labels[LABELS.replica] = labelValue(input.settings.replica);
  const lifecycle = target.version.config.lifecycleConfiguration;
  const annotations: Record<string, string> = {
    [ANNOTATIONS.runtimeArn]: target.runtime.arn,
    [ANNOTATIONS.idleTimeoutS]: String(lifecycle.idleRuntimeSessionTimeout),
    [ANNOTATIONS.maxLifetimeS]: String(lifecycle.maxLifetime),
  };
  if (input.for.kind === 'session') {
    labels[LABELS.sessionHash] = sessionHash(input.for.sessionId);
    annotations[ANNOTATIONS.sessionId] = input.for.sessionId;
  } else {
    labels[LABELS.pool] = 'warm';
    labels[LABELS.slot] = String(input.for.slot);
  }
  const name =
    input.for.kind === 'session'
      ? sessionPodName(target.runtime.id, input.for.sessionId)
      : warmPodName(target.runtime.id, target.version.version, input.for.slot);
  return { name, labels, annotations };
}

/**
 * One session's pod (or one warm slot's): one container from the version's image with the local
 * backends' guarantees in its spec — user 65534 and never root, no capabilities, no privilege
 * escalation, a read-only root with a sized /tmp, seccomp RuntimeDefault, CPU / memory / scratch
 * limits, the operator's runtimeClassName (gVisor, Kata) — no service-account token (a session
 * never reaches the API server), no service links in its environment, and no restarts: a worker
 * that exits ends its session, as on the local backends.
 */
export function sessionPod(input: SessionPodInput): V1Pod {
  const { settings } = input;
  const { volumes, mounts } = volumesOf(input);
  const { name, labels, annotations } = podMetadata(input);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: settings.namespace,
      labels,
      annotations,
      ...(input.owner ? { ownerReferences: [input.owner] } : {}),
    },
    spec: {
      containers: [containerOf(input, mounts)],
      volumes,
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: POD_USER,
        runAsGroup: POD_USER,
        fsGroup: POD_USER,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      terminationGracePeriodSeconds: settings.terminationGraceSeconds,
      ...(settings.runtimeClassName ? { runtimeClassName: settings.runtimeClassName } : {}),
      ...(settings.nodeSelector ? { nodeSelector: settings.nodeSelector } : {}),
      ...(settings.tolerations ? { tolerations: settings.tolerations } : {}),
    },
  };
}

/**
 * The storage claim of a session of a version with sessionStorage: labelled by runtime, version
 * and session hash, so the Lease holder's storage reaper finds the claims of versions not kept.
 */
export function sessionStorageClaim(
  target: SessionTarget,
  sessionId: string,
  settings: PodSettings,
): V1PersistentVolumeClaim {
  if (!sessionStorageMount(target))
    throw new PodSpecError('filesystemConfigurations: the version has no sessionStorage');
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: storageClaimName(target.runtime.id, target.version.version, sessionId),
      namespace: settings.namespace,
      labels: {
        ...versionLabels(target),
        [LABELS.component]: 'session-storage',
        [LABELS.sessionHash]: sessionHash(sessionId),
      },
      annotations: {
        [ANNOTATIONS.sessionId]: sessionId,
        [ANNOTATIONS.runtimeArn]: target.runtime.arn,
        [ANNOTATIONS.storageUsedMs]: String(Date.now()),
      },
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: mebibytes(settings.storageMb) } },
      ...(settings.storageClassName ? { storageClassName: settings.storageClassName } : {}),
    },
  };
}

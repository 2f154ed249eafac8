import { dumpYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type RuntimeRecord, type VersionRecord } from '../../../control/store.js';
import { type SessionTarget } from '../../backend.js';
import { containerEnv } from '../../container-env.js';
import {
  ANNOTATIONS,
  LABELS,
  PodSpecError,
  type PodSettings,
  imageOf,
  labelValue,
  podSettingsOf,
  sessionHash,
  sessionPod,
  sessionPodName,
  sessionSelector,
  sessionStorageClaim,
  storageClaimName,
  warmPodName,
} from './pod-spec.js';
import { sessionNetworkPolicy } from './network-policy.js';

/** A DNS-1123 label (what a pod's or a claim's name must be), and a label value. */
const DNS_1123_LABEL = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

function target(
  config: Partial<VersionRecord['config']> = {},
  runtimeId = 'weather_agent-a1B2c3D4e5',
): SessionTarget {
  const runtime: RuntimeRecord = {
    id: runtimeId,
    name: 'weather_agent',
    arn: `arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/${runtimeId}`,
    latestVersion: 3,
    status: 'READY',
    createdAt: '2026-11-26T00:00:00.000Z',
    lastUpdatedAt: '2026-11-26T00:00:00.000Z',
    workloadIdentityArn: 'arn:aws:bedrock-agentcore:us-east-1:123456789012:workload-identity/x',
  };
  const version: VersionRecord = {
    runtimeId,
    version: 3,
    status: 'READY',
    createdAt: '2026-11-26T00:00:00.000Z',
    config: {
      agentRuntimeArtifact: {
        containerConfiguration: { containerUri: 'registry.example:5000/agents/weather:1.2' },
      },
      roleArn: 'arn:aws:iam::123456789012:role/AgentRuntimeRole',
      networkConfiguration: { networkMode: 'PUBLIC' },
      lifecycleConfiguration: { idleRuntimeSessionTimeout: 900, maxLifetime: 28800 },
      ...config,
    },
  };
  return { runtime, version };
}

const settings: PodSettings = podSettingsOf(
  { sessionMemoryMb: 2048, sessionVcpus: 2, sessionDiskMb: 512, sessionStorageMb: 1024 },
  { namespace: 'agents' },
);
const SESSION = 'session-0123456789abcdef0123456789abcdef';
const env = containerEnv(
  { PATH: '/usr/bin', PORT: '8080', OTEL_SERVICE_NAME: 'agentrt-runtime', AWS_REGION: 'us-east-1' },
  'weather_agent',
);

/** Session ids the runtime accepts (≥ 33 characters of letters, digits and `._:@=+/-`), at the edges. */
const HOSTILE_IDS = [
  'A'.repeat(33),
  'a'.repeat(33),
  `x${'/'.repeat(255)}`,
  `0${'.-_:@=+/'.repeat(31)}z`.slice(0, 256),
  '../../../../etc/passwd/../../../../../../..',
  'user:123@tenant=a+b/c.d_e-f:ghijklmnopqrstuvwxyz',
  `${'9'.repeat(63)}-`,
];

describe('session pod', () => {
  const pod = sessionPod({
    target: target(),
    for: { kind: 'session', sessionId: SESSION },
    env,
    healthCheck: 'ping',
    settings,
  });
  const spec = pod.spec!;
  const container = spec.containers[0]!;

  it('runs one container from the version image, never as root, with nothing to escalate to', () => {
    expect(spec.containers).toHaveLength(1);
    expect(container.image).toBe('registry.example:5000/agents/weather:1.2');
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 65534,
      allowPrivilegeEscalation: false,
      privileged: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(spec.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(spec).toMatchObject({
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      restartPolicy: 'Never',
    });
    expect(spec.runtimeClassName).toBeUndefined();
  });

  it('limits CPU, memory and scratch, and requests no more than its limits', () => {
    expect(container.resources).toEqual({
      limits: { cpu: '2000m', memory: '2048Mi', 'ephemeral-storage': '512Mi' },
      requests: { cpu: '200m', memory: '205Mi' },
    });
    const greedy = sessionPod({
      target: target(),
      for: { kind: 'warm', slot: 0 },
      env,
      healthCheck: 'ping',
      settings: { ...settings, requests: { cpuMillis: 99_000, memoryMb: 99_000 } },
    });
    expect(greedy.spec!.containers[0]!.resources!.requests).toEqual({ cpu: '2000m', memory: '2048Mi' });
  });

  it('gets the local container backends environment, sorted, with a writable /tmp as home', () => {
    expect(container.env).toEqual([
      { name: 'AWS_REGION', value: 'us-east-1' },
      { name: 'HOME', value: '/tmp' },
      { name: 'OTEL_SERVICE_NAME', value: 'weather_agent' },
      { name: 'PORT', value: '8080' },
      { name: 'TMPDIR', value: '/tmp' },
    ]);
    expect(container.volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
    expect(spec.volumes).toEqual([{ name: 'tmp', emptyDir: { sizeLimit: '512Mi' } }]);
  });

  it('probes /ping for HTTP agents and connects for MCP ones', () => {
    expect(container.readinessProbe!.httpGet).toEqual({ path: '/ping', port: 8080 });
    const mcp = sessionPod({
      target: target(),
      for: { kind: 'warm', slot: 1 },
      env,
      healthCheck: 'connect',
      settings,
    });
    expect(mcp.spec!.containers[0]!.readinessProbe!.tcpSocket).toEqual({ port: 8080 });
  });

  it('takes the operator runtimeClassName (gVisor, Kata), node selector and tolerations', () => {
    const gvisor = sessionPod({
      target: target(),
      for: { kind: 'session', sessionId: SESSION },
      env,
      healthCheck: 'ping',
      settings: {
        ...settings,
        runtimeClassName: 'gvisor',
        nodeSelector: { sandbox: 'gvisor' },
        tolerations: [{ key: 'sandbox', operator: 'Exists', effect: 'NoSchedule' }],
      },
    });
    expect(gvisor.spec).toMatchObject({ runtimeClassName: 'gvisor', nodeSelector: { sandbox: 'gvisor' } });
    expect(gvisor.spec!.tolerations).toHaveLength(1);
  });

  it('names runtime, version and the session hash in labels, the id itself in an annotation', () => {
    expect(pod.metadata!.namespace).toBe('agents');
    expect(pod.metadata!.labels).toEqual({
      'app.kubernetes.io/managed-by': 'agentrt',
      'app.kubernetes.io/component': 'session',
      'agentrt.dev/runtime': 'weather_agent-a1B2c3D4e5',
      'agentrt.dev/version': '3',
      'agentrt.dev/session-hash': sessionHash(SESSION),
    });
    expect(pod.metadata!.annotations![ANNOTATIONS.sessionId]).toBe(SESSION);
    expect(sessionSelector('weather_agent-a1B2c3D4e5', SESSION)).toBe(
      `agentrt.dev/runtime=weather_agent-a1B2c3D4e5,agentrt.dev/session-hash=${sessionHash(SESSION)}`,
    );
  });

  it('marks a warm slot pod as the pool and names no session until a claim labels it', () => {
    const warm = sessionPod({
      target: target(),
      for: { kind: 'warm', slot: 7 },
      env,
      healthCheck: 'ping',
      settings,
    });
    expect(warm.metadata!.name).toBe(warmPodName('weather_agent-a1B2c3D4e5', 3, 7));
    expect(warm.metadata!.labels).toMatchObject({ [LABELS.pool]: 'warm', [LABELS.slot]: '7' });
    expect(warm.metadata!.labels![LABELS.sessionHash]).toBeUndefined();
    expect(warm.metadata!.annotations![ANNOTATIONS.sessionId]).toBeUndefined();
  });

  it('names the runtime process that made it, as a label value whatever its name', () => {
    for (const replica of [
      'agentrt-runtime-7d9f-x2k4p-0a1b2c3d',
      'My_Host.example.com-0a1b2c3d',
      'x'.repeat(80),
    ]) {
      const made = sessionPod({
        target: target(),
        for: { kind: 'warm', slot: 1 },
        env,
        healthCheck: 'ping',
        settings: { ...settings, replica },
      });
      expect(made.metadata!.labels![LABELS.replica], replica).toBe(labelValue(replica));
      expect(made.metadata!.labels![LABELS.replica]).toMatch(LABEL_VALUE);
    }
    expect(pod.metadata!.labels![LABELS.replica]).toBeUndefined();
  });

  it('owns nothing by default and is owned by the given object', () => {
    expect(pod.metadata!.ownerReferences).toBeUndefined();
    const owner = {
      apiVersion: 'agentrt.dev/v1',
      kind: 'AgentRuntime',
      name: 'x',
      uid: 'u-1',
      controller: true,
    };
    const owned = sessionPod({
      target: target(),
      for: { kind: 'session', sessionId: SESSION },
      env,
      healthCheck: 'ping',
      settings,
      owner,
    });
    expect(owned.metadata!.ownerReferences).toEqual([owner]);
  });
});

describe('names and labels of hostile ids', () => {
  it('gives every accepted session id a DNS-1123 pod name and valid label values', () => {
    for (const id of HOSTILE_IDS) {
      for (const name of [sessionPodName('rt-1', id), storageClaimName('rt-1', 1, id)])
        expect(name, id).toMatch(DNS_1123_LABEL);
      expect(sessionHash(id), id).toMatch(LABEL_VALUE);
      const pod = sessionPod({
        target: target(),
        for: { kind: 'session', sessionId: id },
        env,
        healthCheck: 'ping',
        settings,
      });
      for (const value of Object.values(pod.metadata!.labels!)) expect(value, id).toMatch(LABEL_VALUE);
      expect(pod.metadata!.annotations![ANNOTATIONS.sessionId]).toBe(id);
    }
  });

  it('keeps ids apart that differ only in case, and the same id of two runtimes', () => {
    const names = new Set(HOSTILE_IDS.map((id) => sessionPodName('rt-1', id)));
    expect(names.size).toBe(HOSTILE_IDS.length);
    expect(sessionPodName('rt-1', 'A'.repeat(33))).not.toBe(sessionPodName('rt-1', 'a'.repeat(33)));
    expect(sessionPodName('rt-1', SESSION)).not.toBe(sessionPodName('rt-2', SESSION));
    expect(sessionPodName('rt-1', SESSION)).toBe(sessionPodName('rt-1', SESSION));
  });

  it('hashes a runtime id that is not a label value, and keeps one that is', () => {
    expect(labelValue('weather_agent-a1B2c3D4e5')).toBe('weather_agent-a1B2c3D4e5');
    for (const bad of ['x'.repeat(64), '-leading', 'trailing_', 'spa ce', 'slash/es', 'ünï'])
      expect(labelValue(bad), bad).toMatch(/^h-[0-9a-f]{40}$/);
    const pod = sessionPod({
      target: target({}, 'x'.repeat(70)),
      for: { kind: 'session', sessionId: SESSION },
      env,
      healthCheck: 'ping',
      settings,
    });
    expect(pod.metadata!.labels![LABELS.runtime]).toMatch(/^h-[0-9a-f]{40}$/);
    expect(pod.metadata!.name).toMatch(DNS_1123_LABEL);
  });
});

describe('image', () => {
  it('runs the manifest digest the version was pinned to, whatever the tag names now', () => {
    const pinned = target();
    pinned.version.artifact = {
      kind: 'image',
      engine: 'podman',
      ref: 'registry.example:5000/agents/weather:1.2',
      id: 'sha256:cfg',
      digest: 'sha256:abc',
    };
    expect(imageOf(pinned)).toBe('registry.example:5000/agents/weather@sha256:abc');
  });

  it('refuses a version without a containerUri, naming the field', () => {
    const bare = target({ agentRuntimeArtifact: {} });
    expect(() => imageOf(bare)).toThrow(PodSpecError);
    expect(() => imageOf(bare)).toThrow(/containerConfiguration\.containerUri/);
  });
});

describe('session storage', () => {
  const storage = target({ filesystemConfigurations: [{ sessionStorage: { mountPath: '/mnt/data/' } }] });

  it('mounts the session claim at the version mountPath', () => {
    const pod = sessionPod({
      target: storage,
      for: { kind: 'session', sessionId: SESSION },
      env,
      healthCheck: 'ping',
      settings,
    });
    const claimName = storageClaimName(storage.runtime.id, storage.version.version, SESSION);
    expect(pod.spec!.volumes).toContainEqual({
      name: 'session-storage',
      persistentVolumeClaim: { claimName },
    });
    expect(pod.spec!.containers[0]!.volumeMounts).toContainEqual({
      name: 'session-storage',
      mountPath: '/mnt/data',
    });
    const claim = sessionStorageClaim(storage, SESSION, { ...settings, storageClassName: 'fast' });
    expect(claim.metadata!.name).toBe(claimName);
    expect(claim.metadata!.labels![LABELS.sessionHash]).toBe(sessionHash(SESSION));
    expect(claim.spec).toEqual({
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1024Mi' } },
      storageClassName: 'fast',
    });
  });

  it('gives a warm pod no claim (storage versions start cold) and refuses a claim without storage', () => {
    const warm = sessionPod({
      target: storage,
      for: { kind: 'warm', slot: 0 },
      env,
      healthCheck: 'ping',
      settings,
    });
    expect(warm.spec!.volumes).toHaveLength(1);
    expect(() => sessionStorageClaim(target(), SESSION, settings)).toThrow(/sessionStorage/);
  });
});

interface Egress {
  to: { ipBlock?: { cidr: string; except: string[] } }[];
  ports?: unknown[];
}

/** An object as the API server receives it from client-node. */
const wire = <T>(object: T): T => parse(dumpYaml(object)) as T;

describe('network policy', () => {
  it('denies both ways by default, lets only the runtime in, and DNS, the runtime and the internet out', () => {
    const policy = wire(sessionNetworkPolicy(target(), settings)) as {
      spec: {
        policyTypes: string[];
        podSelector: { matchLabels: object };
        ingress: unknown[];
        egress: Egress[];
      };
    };
    expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec.podSelector.matchLabels).toEqual({
      'app.kubernetes.io/managed-by': 'agentrt',
      'app.kubernetes.io/component': 'session',
      'agentrt.dev/runtime': 'weather_agent-a1B2c3D4e5',
      'agentrt.dev/version': '3',
    });
    expect(policy.spec.ingress).toEqual([
      {
        from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'agentrt-runtime' } } }],
        ports: [{ protocol: 'TCP', port: 8080 }],
      },
    ]);
    const egress = policy.spec.egress;
    expect(egress[0]!.ports).toEqual([
      { protocol: 'UDP', port: 53 },
      { protocol: 'TCP', port: 53 },
    ]);
    expect(egress[1]).toEqual({
      to: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'agentrt-runtime' } } }],
      ports: [{ protocol: 'TCP', port: 4318 }],
    });
    const internet = egress[2]!.to.map((peer) => peer.ipBlock ?? { cidr: '', except: [] });
    expect(internet[0]!.cidr).toBe('0.0.0.0/0');
    for (const closed of ['10.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.168.0.0/16', '127.0.0.0/8'])
      expect(internet[0]!.except).toContain(closed);
    expect(internet[1]).toMatchObject({ cidr: '::/0' });
    expect(internet[1]!.except).toContain('fe80::/10');
    expect(egress[2]!.ports).toBeUndefined();
  });

  it('gives a VPC version no internet', () => {
    const policy = sessionNetworkPolicy(target({ networkConfiguration: { networkMode: 'VPC' } }), settings);
    expect(policy.spec!.egress).toHaveLength(2);
    expect(JSON.stringify(policy.spec!.egress)).not.toContain('ipBlock');
  });
});

import { readFileSync } from 'node:fs';
import { dumpYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  type PodSettings,
  type SessionTarget,
  podSettingsOf,
  sessionNetworkPolicy,
  sessionPod,
  sessionStorageClaim,
} from '@agentrt/runtime';
import {
  type KubeObject,
  crdFiles,
  kustomize,
  loadCrds,
  objectProblems,
  parseObjects,
  structuralProblems,
} from './k8s-schema.js';

const ROOT = new URL('../../../', import.meta.url);
const CRD_DIR = new URL('deploy/k8s/crds/', ROOT);
const crds = loadCrds(...crdFiles(CRD_DIR));

/** A manifest read as plain JSON: a test reaches into it by path. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = KubeObject & { spec: any; status?: any };

const problemsOf = (objects: KubeObject[]) => objects.flatMap((o) => objectProblems(o, crds));
const find = (objects: KubeObject[], kind: string, name: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name) as Loose;

describe('the schemas catch what is wrong (the checks below can fail)', () => {
  const deployment = find(kustomize('deploy/k8s'), 'Deployment', 'agentrt-runtime');

  it('refuses a wrong type, an unknown enum value and a misspelt field of a built-in kind', () => {
    const broken = structuredClone(deployment);
    broken.spec.replicas = 'two';
    broken.spec.template.spec.containers[0].imagePullPolicy = 'Sometimes';
    broken.spec.template.spec.containers[0].securityContex = { runAsNonRoot: true };
    const problems = problemsOf([broken]).join('\n');
    expect(problems).toMatch(/replicas/);
    expect(problems).toMatch(/imagePullPolicy/);
    expect(problems).toMatch(/spec\.template\.spec\.containers\[0\]\.securityContex: unknown field/);
  });

  it('refuses a custom resource that breaks its CRD schema, or has a field the CRD does not know', () => {
    const [runtime] = parseObjects(
      readFileSync(new URL('deploy/k8s/samples/weather-runtime.yaml', ROOT), 'utf8'),
    );
    const broken = structuredClone(runtime!) as Loose;
    broken.spec.latestVersion = 0;
    broken.status.status = 'HAPPY';
    broken.status.extra = 1;
    const problems = problemsOf([broken]).join('\n');
    expect(problems).toMatch(/\/spec\/latestVersion must be >= 1/);
    expect(problems).toMatch(/\/status\/status must be equal to one of the allowed values/);
    expect(problems).toMatch(/\/status must NOT have additional properties/);
  });

  it('refuses a kind nothing here defines, and a schema node without a type', () => {
    expect(problemsOf([{ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } }])).toEqual([
      'Widget/w: no schema for example.com/v1 Widget',
    ]);
    expect(structuralProblems({ type: 'object', properties: { a: { description: 'untyped' } } })).toEqual([
      '.a: no type',
    ]);
  });
});

describe('deploy/k8s (kubectl apply -k deploy/k8s/)', () => {
  const stack = kustomize('deploy/k8s');

  it('is valid against the Kubernetes OpenAPI schemas, every object', () => {
    expect(stack.length).toBeGreaterThanOrEqual(14);
    expect(problemsOf(stack)).toEqual([]);
  });

  it('puts everything but the CRDs in the namespace agentrt', () => {
    for (const o of stack.filter((o) => !['Namespace', 'CustomResourceDefinition'].includes(o.kind)))
      expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toBe('agentrt');
  });

  it('defines the agentrt.dev/v1 CRDs with structural schemas (the agent-sandbox ones come with its controller)', () => {
    const defined = stack.filter((o) => o.kind === 'CustomResourceDefinition');
    expect(defined.map((o) => o.metadata.name).sort()).toEqual([
      'agentruntimeendpoints.agentrt.dev',
      'agentruntimes.agentrt.dev',
      'agentruntimeversions.agentrt.dev',
    ]);
  });

  it('runs the runtime as 2 replicas under its own service account, non-root, behind a Service', () => {
    const deployment = find(stack, 'Deployment', 'agentrt-runtime');
    expect(deployment.spec.replicas).toBe(2);
    const pod = deployment.spec.template.spec;
    expect(pod.serviceAccountName).toBe('agentrt-runtime');
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    const env = Object.fromEntries(
      (pod.containers[0].env as { name: string; value?: string }[]).map((e) => [e.name, e.value]),
    );
    expect(env.AGENTRT_SESSIONS).toBe('kubernetes');
    expect(env.AGENTRT_CONTROL_STORE).toBe('kubernetes');
    const service = find(stack, 'Service', 'agentrt-runtime');
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
    expect(find(stack, 'PodDisruptionBudget', 'agentrt-runtime').spec.minAvailable).toBe(1);
  });

  it('grants least privilege: one namespaced Role, no wildcards', () => {
    expect(stack.some((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding')).toBe(false);
    const role = find(stack, 'Role', 'agentrt-runtime') as unknown as {
      rules: { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }[];
    };
    const granted = new Set<string>();
    for (const rule of role.rules) {
      expect(rule.verbs).not.toContain('*');
      expect(rule.resources).not.toContain('*');
      for (const group of rule.apiGroups)
        for (const resource of rule.resources)
          for (const verb of rule.verbs) granted.add(`${group}/${resource}:${verb}`);
    }
    for (const needed of [
      '/pods:create',
      '/pods:patch',
      '/pods:watch',
      '/pods/exec:create',
      '/pods/log:get',
      '/persistentvolumeclaims:create',
      '/events:list',
      'networking.k8s.io/networkpolicies:create',
      'agentrt.dev/agentruntimes:update',
      '/configmaps:update',
      'extensions.agents.x-k8s.io/sandboxclaims:delete',
      'extensions.agents.x-k8s.io/sandboxclaims:watch',
      'extensions.agents.x-k8s.io/sandboxwarmpools:patch',
      'extensions.agents.x-k8s.io/sandboxwarmpools:deletecollection',
      'extensions.agents.x-k8s.io/sandboxtemplates:deletecollection',
      'agents.x-k8s.io/sandboxes:watch',
      'coordination.k8s.io/leases:update',
      'coordination.k8s.io/leases:delete',
    ])
      expect(granted, needed).toContain(needed);
    for (const never of [
      '/secrets:get',
      '/nodes:get',
      '/pods:deletecollection',
      'extensions.agents.x-k8s.io/sandboxclaims:deletecollection',
      'agents.x-k8s.io/sandboxes:delete',
    ])
      expect(granted, never).not.toContain(never);
    const binding = find(stack, 'RoleBinding', 'agentrt-runtime') as unknown as {
      subjects: { kind: string; name: string; namespace: string }[];
    };
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'agentrt-runtime', namespace: 'agentrt' },
    ]);
  });

  it('runs the weather service as in the seed: non-root, 2 workers, Service port 80 → the container port', () => {
    const deployment = find(stack, 'Deployment', 'weather');
    const pod = deployment.spec.template.spec;
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    const [container] = pod.containers;
    const env = Object.fromEntries(
      (container.env as { name: string; value?: string }[]).map((e) => [e.name, e.value]),
    );
    expect(env.WEATHER_WORKERS).toBe('2');
    expect(env.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://agentrt-collector:4318');
    const service = find(stack, 'Service', 'weather');
    expect(service.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
    expect(container.ports).toContainEqual({
      name: 'http',
      containerPort: Number(env.PORT),
      protocol: 'TCP',
    });
    expect(find(stack, 'Deployment', 'agentrt-collector').spec.replicas).toBeGreaterThanOrEqual(2);
  });
});

describe('examples/weather/k8s (kubectl apply -k examples/weather/k8s/)', () => {
  it('is valid against the Kubernetes OpenAPI schemas', () => {
    const objects = kustomize('examples/weather/k8s');
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'Deployment/agentrt-collector',
      'Deployment/weather',
      'Service/agentrt-collector',
      'Service/weather',
    ]);
    expect(problemsOf(objects)).toEqual([]);
  });
});

describe('CRDs', () => {
  it('agentrt.dev and the vendored agent-sandbox CRDs have structural schemas and valid definitions', () => {
    for (const file of crdFiles(CRD_DIR))
      for (const crd of parseObjects(readFileSync(file, 'utf8')) as Loose[]) {
        expect(objectProblems(crd, crds), file).toEqual([]);
        for (const version of crd.spec.versions)
          expect(
            structuralProblems(version.schema.openAPIV3Schema),
            `${crd.metadata.name} ${version.name}`,
          ).toEqual([]);
      }
    expect([...crds.keys()].sort()).toEqual([
      'agentrt.dev/v1/AgentRuntime',
      'agentrt.dev/v1/AgentRuntimeEndpoint',
      'agentrt.dev/v1/AgentRuntimeVersion',
      'agents.x-k8s.io/v1alpha1/Sandbox',
      'agents.x-k8s.io/v1beta1/Sandbox',
      'extensions.agents.x-k8s.io/v1alpha1/SandboxClaim',
      'extensions.agents.x-k8s.io/v1alpha1/SandboxTemplate',
      'extensions.agents.x-k8s.io/v1alpha1/SandboxWarmPool',
      'extensions.agents.x-k8s.io/v1beta1/SandboxClaim',
      'extensions.agents.x-k8s.io/v1beta1/SandboxTemplate',
      'extensions.agents.x-k8s.io/v1beta1/SandboxWarmPool',
    ]);
  });

  it('the samples under deploy/k8s/samples are valid custom resources', () => {
    for (const name of ['weather-runtime.yaml', 'agent-sandbox-weather.yaml']) {
      const objects = parseObjects(readFileSync(new URL(`deploy/k8s/samples/${name}`, ROOT), 'utf8'));
      expect(objects.length, name).toBeGreaterThanOrEqual(3);
      expect(problemsOf(objects), name).toEqual([]);
    }
  });
});

describe('what the kubernetes backend writes (pod-spec.ts)', () => {
  const target: SessionTarget = {
    runtime: {
      id: 'weather_agent-Xq3ZkP9aBc',
      name: 'weather_agent',
      arn: 'arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/weather_agent-Xq3ZkP9aBc',
      latestVersion: 1,
      status: 'READY',
      createdAt: '2026-11-26T20:00:00.000Z',
      lastUpdatedAt: '2026-11-26T20:00:00.000Z',
      workloadIdentityArn: 'arn:aws:bedrock-agentcore:us-east-1:123456789012:workload-identity/x',
    },
    version: {
      runtimeId: 'weather_agent-Xq3ZkP9aBc',
      version: 1,
      status: 'READY',
      createdAt: '2026-11-26T20:00:00.000Z',
      config: {
        agentRuntimeArtifact: {
          containerConfiguration: { containerUri: 'registry.example.com/agents/weather:1.0.0' },
        },
        roleArn: 'arn:aws:iam::123456789012:role/AgentRuntimeRole',
        networkConfiguration: { networkMode: 'PUBLIC' },
        lifecycleConfiguration: { idleRuntimeSessionTimeout: 900, maxLifetime: 28800 },
        filesystemConfigurations: [{ sessionStorage: { mountPath: '/mnt/workspace' } }],
      },
    },
  };
  const settings: PodSettings = podSettingsOf(
    { sessionMemoryMb: 2048, sessionVcpus: 2, sessionDiskMb: 512, sessionStorageMb: 1024 },
    { namespace: 'agentrt', runtimeClassName: 'gvisor', storageClassName: 'standard' },
  );
  const sessionId = 'user-42:conversation/0001.0123456789abcdef+x=y@z';
  const env = { PORT: '8080', HOME: '/tmp', TMPDIR: '/tmp', OTEL_SERVICE_NAME: 'weather_agent' };
  /** As the API server receives them from client-node. */
  const wire = (object: object) => parseObjects(dumpYaml(object))[0]!;

  it('the session pod, its storage claim and the version NetworkPolicy are valid Kubernetes objects', () => {
    const objects = [
      sessionPod({ target, for: { kind: 'session', sessionId }, env, healthCheck: 'ping', settings }),
      sessionPod({ target, for: { kind: 'warm', slot: 3 }, env, healthCheck: 'connect', settings }),
      sessionStorageClaim(target, sessionId, settings),
      sessionNetworkPolicy(target, settings),
    ].map(wire);
    expect(objects.map((o) => o.kind)).toEqual(['Pod', 'Pod', 'PersistentVolumeClaim', 'NetworkPolicy']);
    expect(problemsOf(objects)).toEqual([]);
  });

  it('the session pod template is a valid agent-sandbox SandboxTemplate (agent-sandbox mode)', () => {
    const pod = wire(
      sessionPod({ target, for: { kind: 'warm', slot: 0 }, env, healthCheck: 'ping', settings }),
    );
    const template: KubeObject = {
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxTemplate',
      metadata: { name: 'agentrt-weather-v1', namespace: 'agentrt' },
      spec: {
        podTemplate: { metadata: { labels: pod.metadata.labels }, spec: pod.spec },
        envVarsInjectionPolicy: 'Disallowed',
        networkPolicyManagement: 'Unmanaged',
      },
    };
    expect(problemsOf([template])).toEqual([]);
  });
});

import { describe, expect, it } from 'vitest';
import { parseStoreSetting } from '@agentrt/collector';
import { kustomize } from './k8s-schema.js';

interface Manifest {
  kind: string;
  metadata: { name: string };
  stringData?: Record<string, string>;
  spec: {
    replicas?: number;
    selector?: Record<string, string> & { matchLabels?: Record<string, string> };
    ports?: { port: number; targetPort?: string | number }[];
    template?: {
      metadata: { labels: Record<string, string> };
      spec: {
        containers: {
          name: string;
          image: string;
          ports?: { name?: string; containerPort: number }[];
          env?: { name: string; value?: string }[];
          envFrom?: { secretRef?: { name: string } }[];
        }[];
      };
    };
  };
}

const DIR = 'examples/weather/k8s';
/** Collectors on ClickHouse: a Deployment of N replicas, a Service, the store's Secret. */
const COLLECTOR_DIR = 'deploy/k8s';

/** What `kubectl apply -k <dir>` applies. */
function manifests(dir = DIR): Manifest[] {
  return kustomize(dir) as unknown as Manifest[];
}

/** Every Service selects a Deployment's pods and targets a port they name. */
function checkServices(all: Manifest[]): void {
  const services = all.filter((m) => m.kind === 'Service');
  const deployments = all.filter((m) => m.kind === 'Deployment');
  expect(services.length).toBeGreaterThan(0);
  for (const s of services) {
    const selector = s.spec.selector ?? {};
    const target = deployments.find((d) =>
      Object.entries(selector).every(([k, v]) => d.spec.template!.metadata.labels[k] === v),
    );
    expect(target, `Service ${s.metadata.name} selects no Deployment`).toBeDefined();
    const named = target!.spec.template!.spec.containers.flatMap((c) => c.ports ?? []);
    for (const p of s.spec.ports ?? [])
      expect(
        named.some((n) => n.name === p.targetPort || n.containerPort === p.targetPort),
        `Service ${s.metadata.name} port ${p.port} → ${p.targetPort}`,
      ).toBe(true);
  }
}

/**
 * `kubectl apply -k examples/weather/k8s/` (no cluster here): every Service a pod sends to is defined
 * in the folder, selects a Deployment's pods and targets a port they expose.
 */
describe('examples/weather/k8s', () => {
  const all = manifests();
  const services = all.filter((m) => m.kind === 'Service');
  const deployments = all.filter((m) => m.kind === 'Deployment');

  it('every in-cluster URL in the pods’ env points at a Service defined here, on a port it serves', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const d of deployments) {
      for (const c of d.spec.template!.spec.containers) {
        for (const e of c.env ?? []) {
          if (!e.value || !/^https?:\/\//.test(e.value)) continue;
          const url = new URL(e.value);
          if (url.hostname.includes('.')) continue; // outside the cluster (api.weather.gov)
          checked++;
          const service = services.find((s) => s.metadata.name === url.hostname);
          if (!service) {
            problems.push(
              `${d.metadata.name}/${c.name} ${e.name}=${e.value}: no Service '${url.hostname}' in ${DIR}`,
            );
            continue;
          }
          const port = Number(url.port || 80);
          if (!service.spec.ports?.some((p) => p.port === port))
            problems.push(`${e.name}=${e.value}: Service ${url.hostname} has no port ${port}`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(0);
  });

  it('every Service selects a Deployment’s pods and targets a port they name', () => {
    checkServices(all);
  });
});

describe('deploy/k8s (collectors on ClickHouse)', () => {
  const all = manifests(COLLECTOR_DIR);
  const deployment = all.find((m) => m.kind === 'Deployment' && m.metadata.name === 'agentrt-collector')!;

  it('runs the collector image with two or more replicas behind a Service', () => {
    expect(deployment).toBeDefined();
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
    const [container] = deployment.spec.template!.spec.containers;
    expect(container!.image).toMatch(/^agentrt\/collector:/);
    checkServices(all);
  });

  it('takes AGENTRT_STORE from a Secret defined here, a ClickHouse URL the collector accepts', () => {
    const [container] = deployment.spec.template!.spec.containers;
    const secretName = container!.envFrom?.find((e) => e.secretRef)?.secretRef?.name;
    const secret = all.find((m) => m.kind === 'Secret' && m.metadata.name === secretName);
    expect(secret, `Secret ${secretName}`).toBeDefined();
    const setting = parseStoreSetting(secret!.stringData?.['AGENTRT_STORE']);
    expect(setting.kind).toBe('clickhouse');
    // Not also set (and overridden) in env.
    expect(container!.env?.map((e) => e.name)).not.toContain('AGENTRT_STORE');
    const env = Object.fromEntries((container!.env ?? []).map((e) => [e.name, e.value]));
    expect(env['AGENTRT_COLLECTOR_HOST']).toBe('0.0.0.0');
    expect(container!.ports?.map((p) => String(p.containerPort))).toContain(env['AGENTRT_COLLECTOR_PORT']);
    const service = all.find((m) => m.kind === 'Service' && m.metadata.name === 'agentrt-collector')!;
    expect(env['AGENTRT_COLLECTOR_ALLOWED_HOSTS']?.split(',')).toContain(service.metadata.name);
  });
});

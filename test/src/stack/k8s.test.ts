import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { readRepoFile } from './repo.js';

interface Manifest {
  kind: string;
  metadata: { name: string };
  spec: {
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
        }[];
      };
    };
  };
}

const DIR = 'examples/weather/k8s';

function manifests(): Manifest[] {
  return readdirSync(new URL(`../../../${DIR}`, import.meta.url))
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(readRepoFile(`${DIR}/${f}`)).map((d) => d.toJS() as Manifest));
}

/**
 * `kubectl apply -f examples/weather/k8s/` (no cluster here): every Service a pod sends to is defined
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
  });
});

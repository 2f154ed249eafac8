/**
 * The weather service as its container runs it: the Dockerfile's CMD (`node --require
 * @agentrt/instrument dist/main.js`) from dist, with the Dockerfile's ENV, as a real child process.
 * Needs a build (`npx tsc -b examples/weather`).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Collector, createCollector } from '@agentrt/collector';
import { type WeatherApiFixture, startWeatherApiFixture } from '@agentrt/example-models/fixtures';
import {
  checkDockerfile,
  type RunningContainer,
  loggedOfflineNotice,
  readContainerCommand,
  useExampleContainers,
} from '@agentrt/example-models/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

const exampleDir = join(dirname(fileURLToPath(import.meta.url)), '..');
let weather: WeatherApiFixture;

beforeAll(async () => {
  weather = await startWeatherApiFixture({ latencyMs: 150 });
});
afterAll(async () => {
  await weather?.close();
});

const ask = (url: string, prompt: string, path = '/weather', headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ prompt }),
  });

describe('static checks', () => {
  it('the Dockerfile is multi-stage, non-root, exposes 8000, has a HEALTHCHECK and the instrumented CMD', () => {
    const dockerfile = join(exampleDir, 'Dockerfile');
    expect(
      checkDockerfile(dockerfile, { port: 8000, healthPath: '/health', workdir: '/app/examples/weather' }),
    ).toEqual([]);
    expect(readContainerCommand(dockerfile).env).toMatchObject({
      WEATHER_WORKERS: '2',
      NODE_ENV: 'production',
    });
  });

  it('the Kubernetes manifests parse: Deployment with 2 replicas and probes, Service 80 → 8000', () => {
    const docs = ['deployment.yaml', 'service.yaml'].flatMap((file) =>
      parseAllDocuments(readFileSync(join(exampleDir, 'k8s', 'app', file), 'utf8')).map((doc) => {
        expect(doc.errors).toEqual([]);
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- manifests are checked field by field below
        return doc.toJS() as Record<string, any>;
      }),
    );
    const deployment = docs.find((d) => d.kind === 'Deployment')!;
    const service = docs.find((d) => d.kind === 'Service')!;
    expect(deployment.apiVersion).toBe('apps/v1');
    expect(deployment.spec.replicas).toBe(2);
    const pod = deployment.spec.template;
    expect(deployment.spec.selector.matchLabels).toEqual({ 'app.kubernetes.io/name': 'weather' });
    expect(pod.metadata.labels).toMatchObject(deployment.spec.selector.matchLabels);
    expect(pod.spec.securityContext.runAsNonRoot).toBe(true);
    const [container] = pod.spec.containers;
    const port = container.ports.find((p: { name: string }) => p.name === 'http');
    expect(port.containerPort).toBe(8000);
    for (const probe of [container.readinessProbe, container.livenessProbe]) {
      expect(probe.httpGet).toEqual({ path: '/health', port: 'http' });
    }
    expect(service.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
  });
});

// One service (2 workers, exporting to a real collector) serves the three tests in order; the last
// one stops it. Starting the instrumented service is the slow part on a loaded machine.
describe('the container command', { timeout: 180_000 }, () => {
  const startExample = useExampleContainers({ cleanup: 'all' });
  const dataDir = mkdtempSync(join(tmpdir(), 'weather-collector-'));
  let collector: Collector;
  let service: RunningContainer;
  let url: string;

  beforeAll(async () => {
    collector = await createCollector({ dataDir, port: 0, host: '127.0.0.1' });
    const started = await startExample(
      exampleDir,
      {
        WEATHER_API_BASE_URL: weather.url,
        AGENTRT_OFFLINE_CHUNK_DELAY_MS: '10',
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_LOGS_EXPORTER: 'otlp',
        OTEL_BSP_SCHEDULE_DELAY: '100',
        OTEL_SERVICE_NAME: 'weather',
      },
      { listeningMsg: 'worker listening', count: 2 },
    );
    ({ container: service, url } = started);
  }, 180_000);
  afterAll(async () => {
    await collector?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs 2 workers that serve requests concurrently (distinct worker pids)', async () => {
    const before = weather.maxConcurrent;
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, i) => ask(url, `Weather at ${40 + i}.5,-100.25`)),
    );
    const pids = new Set<string>();
    for (const response of responses) {
      expect(response.status).toBe(200);
      expect(await response.text()).toMatch(/^Here is the forecast for /);
      pids.add(response.headers.get('x-worker-pid')!);
    }
    expect(pids.size).toBe(2);
    expect(pids.has(String(service.child.pid))).toBe(false);
    const workerPids = service.logs
      .filter((l) => l.msg === 'worker listening')
      .map((l) => String(l.workerPid));
    expect([...pids].sort()).toEqual(workerPids.sort());
    expect(Math.max(before, weather.maxConcurrent)).toBeGreaterThanOrEqual(2);
    expect(loggedOfflineNotice(service)).toBe(true);
  });

  it('one request yields the GenAI span tree in the collector, found by session.id', async () => {
    const session = `weather-e2e-${Date.now()}-0123456789abcdef0123`;
    const response = await ask(url, 'What is the weather at 39.7392,-104.9903?', '/weather', {
      'X-Cloud-Agent-Runtime-Session-Id': session,
    });
    expect(response.status).toBe(200);
    await response.text();

    // Poll the collector's API until the trace of this session is complete.
    let tree: { roots: SpanNode[] } | undefined;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const list = (await (await fetch(`${collector.url}/api/traces?sessionId=${session}`)).json()) as {
        traces: { traceId: string; spanCount: number; inProgress: boolean }[];
      };
      const found = list.traces[0];
      if (found && !found.inProgress && found.spanCount >= 7) {
        tree = (await (await fetch(`${collector.url}/api/traces/${found.traceId}`)).json()) as {
          roots: SpanNode[];
        };
        if (flatten(tree.roots).some((n) => n.span.name === 'invoke_agent weather')) break;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(tree).toBeDefined();
    const nodes = flatten(tree!.roots);
    const agent = nodes.find((n) => n.span.name === 'invoke_agent weather')!;
    expect(agent).toBeDefined();
    expect(agent.children.map((c) => c.span.name)).toEqual([
      'chat agentrt-offline-weather-1',
      'execute_tool http_request',
      'chat agentrt-offline-weather-1',
      'execute_tool http_request',
      'chat agentrt-offline-weather-1',
    ]);
    const chat = agent.children[0]!.span;
    expect(chat.kind).toBe('CLIENT');
    expect(chat.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'offline',
      'gen_ai.request.model': 'agentrt-offline-weather-1',
      'gen_ai.conversation.id': session,
      'session.id': session,
    });
    expect(Number(chat.attributes['gen_ai.usage.input_tokens'])).toBeGreaterThan(0);
    // The invocation's server span is the agent's parent; the tool's outbound HTTP call nests in the tool span.
    const parent = nodes.find((n) => n.children.includes(agent))!;
    expect(parent.span.kind).toBe('SERVER');
    expect(parent.span.attributes['session.id']).toBe(session);
    // Named with its route, as the HTTP conventions say: `POST /weather`, not `POST`.
    expect(parent.span.name).toBe('POST /weather');
    expect(parent.span.attributes['http.route']).toBe('/weather');
    expect(agent.children[1]!.children.some((c) => c.span.kind === 'CLIENT')).toBe(true);
    // Content capture is off by default.
    expect(nodes.every((n) => !Object.keys(n.span.attributes).some((k) => k.endsWith('.messages')))).toBe(
      true,
    );
  });

  it('health probes are traced as such and kept out of the default trace list', async () => {
    expect((await fetch(`${url}/health`)).status).toBe(200);
    const probes = async (query: string) =>
      (
        (await (await fetch(`${collector.url}/api/traces?service=weather${query}`)).json()) as {
          traces: { rootName: string; noise?: string }[];
        }
      ).traces.filter((t) => t.rootName === 'GET /health');
    await expect.poll(() => probes('&noise=only'), { timeout: 30_000 }).not.toEqual([]);
    expect((await probes('&noise=only'))[0]!.noise).toBe('probe');
    expect(await probes('')).toEqual([]);
  });

  it('SIGTERM drains: an in-flight stream finishes, then the service exits 0', async () => {
    const response = await ask(url, 'Weather at 47.6062,-122.3321', '/weather-streaming');
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    service.child.kill('SIGTERM');
    let text = new TextDecoder().decode(first.value);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toMatch(/^Here is the forecast for Seattle, WA:[\s\S]*In detail, tonight: /);
    expect(await service.exited).toEqual({ code: 0, signal: null });
    expect(service.logs.filter((l) => l.msg === 'draining')).toHaveLength(2);
    expect(service.logs.filter((l) => l.msg === 'worker stopped')).toHaveLength(2);
    await expect(fetch(`${url}/health`)).rejects.toThrow();
  });
});

interface SpanNode {
  span: { name: string; kind: string; attributes: Record<string, unknown> };
  children: SpanNode[];
}

function flatten(nodes: SpanNode[]): SpanNode[] {
  return nodes.flatMap((n) => [n, ...flatten(n.children)]);
}

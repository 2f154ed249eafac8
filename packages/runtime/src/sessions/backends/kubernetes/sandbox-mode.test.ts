// agent-sandbox mode (AGENTRT_K8S_MODE=agent-sandbox) on the test API server, the test kubelet and
// the test agent-sandbox controller: the objects the runtime makes and the controller's answers,
// read back with kubectl (a template and a pool per version, one claim per session, a warm claim
// adopting a pool sandbox, stop deleting claim, sandbox and pod); a claim whose sandbox never
// becomes ready (424 with its events, nothing left); a claim no controller binds (424 that says so).
import { type Server, createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { RuntimeClientError, StopRuntimeSessionCommand } from '@aws-sdk/client-bedrock-agentcore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SandboxCluster, startSandboxCluster } from '../../../test-support/k8s/test-cluster.js';
import {
  type TestRuntime,
  createReady,
  invokeJson,
  sessionId,
  startRuntime,
  waitFor,
} from '../../../test-support.js';
import { LABELS, labelValue, sessionHash } from './pod-spec.js';
import { SANDBOX_KEYS, type SandboxObject, nameHash } from './sandbox-spec.js';

let cluster: SandboxCluster;
let rt: TestRuntime;
let receiver: Server;
/** The runtime's spans, as its OTLP/JSON exporter sends them. */
const spans: { name: string; spanId: string; parentSpanId?: string; attributes: KeyValue[] }[] = [];
interface KeyValue {
  key: string;
  value: { stringValue?: string };
}
const attr = (list: KeyValue[], key: string) => list.find((a) => a.key === key)?.value.stringValue;

/** The start phases of the session's StartSession span, by name, with their string attributes. */
function startPhases(session: string): Record<string, Record<string, string | undefined>> {
  const invoke = spans.find(
    (s) => s.name === 'InvokeAgentRuntime' && attr(s.attributes, 'session.id') === session,
  );
  const start = spans.find((s) => s.name === 'StartSession' && s.parentSpanId === invoke?.spanId);
  const phases = spans.filter((s) => start && s.parentSpanId === start.spanId);
  return Object.fromEntries(
    phases.map((p) => [p.name, Object.fromEntries(p.attributes.map((a) => [a.key, a.value.stringValue]))]),
  );
}

/** `kubectl get <kind> -l <selector> -o json`: the items. */
const kubectlGet = (kind: string, selector: string) => cluster.kubectlGet<SandboxObject>(kind, selector);

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: Error) => error,
  );

beforeAll(async () => {
  cluster = await startSandboxCluster();
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      if (req.url === '/v1/traces')
        for (const r of (JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: never[] }[] }[] })
          .resourceSpans)
          for (const scope of r.scopeSpans) spans.push(...scope.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  rt = await startRuntime({
    otlpEndpoint: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
    otlpProtocol: 'http/json',
    sessions: 'kubernetes',
    kubernetesMode: 'agent-sandbox',
    kubeconfig: cluster.kubeconfig,
    startTimeoutMs: 4000,
    warmPoolSize: 1,
  });
});
afterAll(async () => {
  await rt?.close();
  await cluster?.close();
  await new Promise<void>((r) => receiver?.close(() => r()));
});

describe('kubernetes backend, agent-sandbox mode', () => {
  it('makes a template and a warm pool per version and a claim per session; a claim adopts a warm sandbox', async () => {
    const runtime = await createReady(rt.control, 'sb_objects', 'counter');
    const runtimeLabel = `${LABELS.runtime}=${labelValue(runtime.agentRuntimeId!)}`;
    await waitFor(() => rt.server.warmCount(runtime.agentRuntimeId!) === 1, 20_000, 'a warm sandbox');
    const [template] = await kubectlGet('sandboxtemplates', runtimeLabel);
    const [pool] = await kubectlGet('sandboxwarmpools', runtimeLabel);
    expect(template?.spec).toMatchObject({ envVarsInjectionPolicy: 'Disallowed' });
    expect(pool?.spec).toEqual({ replicas: 1, sandboxTemplateRef: { name: template?.metadata.name } });
    const [warm] = await kubectlGet('sandboxes', `${SANDBOX_KEYS.warmPool}=${nameHash(pool!.metadata.name)}`);
    expect(warm?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'SandboxWarmPool', controller: true });

    const sid = sessionId('sb-warm');
    expect((await invokeJson(rt.data, runtime.agentRuntimeArn!, sid, {})).count).toBe(1);
    expect(rt.server.sessions().find((s) => s.sessionId === sid)?.warm).toBe(true);
    const claims = await kubectlGet(
      'sandboxclaims',
      `${runtimeLabel},${LABELS.sessionHash}=${sessionHash(sid)}`,
    );
    expect(claims).toHaveLength(1);
    const claim = claims[0]!;
    expect(claim.status?.sandbox?.name).toBe(warm?.metadata.name);
    expect(claim.metadata.annotations?.[SANDBOX_KEYS.sandboxName]).toBe(warm?.metadata.name);
    expect(claim.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    // The adopted sandbox: the claim is its controller, the pool's label gone, launch type warm.
    const [adopted] = await kubectlGet('sandboxes', `${SANDBOX_KEYS.claimUid}=${claim.metadata.uid}`);
    expect(adopted?.metadata.name).toBe(warm?.metadata.name);
    expect(adopted?.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'SandboxClaim', uid: claim.metadata.uid, controller: true }),
    ]);
    expect(adopted?.metadata.labels?.[SANDBOX_KEYS.launchType]).toBe('warm');
    expect(adopted?.metadata.labels?.[SANDBOX_KEYS.warmPool]).toBeUndefined();
    const [pod] = await kubectlGet('pods', `${SANDBOX_KEYS.claimUid}=${claim.metadata.uid}`);
    expect(pod?.metadata.name).toBe(adopted?.metadata.annotations?.[SANDBOX_KEYS.podName]);
    expect((pod as { status?: { podIP?: string } }).status?.podIP).toBe(claim.status?.sandbox?.podIPs?.[0]);

    // The start's readiness span names the pod and the launch type the Sandbox's label says.
    await waitFor(() => startPhases(sid).readiness?.launch_type !== undefined, 10_000, 'the start span');
    expect(startPhases(sid).readiness).toMatchObject({
      launch_type: 'warm',
      'k8s.pod.name': pod?.metadata.name,
    });
    // A second session right after: the pool is refilling, so its claim may adopt the new sandbox or
    // start cold; the span says what the Sandbox's label says, either way.
    const next = sessionId('sb-next');
    expect((await invokeJson(rt.data, runtime.agentRuntimeArn!, next, {})).count).toBe(1);
    const [nextClaim] = await kubectlGet('sandboxclaims', `${LABELS.sessionHash}=${sessionHash(next)}`);
    const [nextSandbox] = await kubectlGet(
      'sandboxes',
      `${SANDBOX_KEYS.claimUid}=${nextClaim?.metadata.uid}`,
    );
    await waitFor(() => startPhases(next).readiness?.launch_type !== undefined, 10_000, 'the start span');
    expect(startPhases(next).readiness?.launch_type).toBe(
      nextSandbox?.metadata.labels?.[SANDBOX_KEYS.launchType],
    );

    // The pool makes another; stop deletes the claim, and its sandbox and pod go with it.
    await waitFor(() => rt.server.warmCount(runtime.agentRuntimeId!) === 1, 20_000, 'the pool replenished');
    await rt.data.send(
      new StopRuntimeSessionCommand({ agentRuntimeArn: runtime.agentRuntimeArn!, runtimeSessionId: sid }),
    );
    expect(await kubectlGet('sandboxclaims', `${LABELS.sessionHash}=${sessionHash(sid)}`)).toEqual([]);
    expect(await kubectlGet('sandboxes', `${SANDBOX_KEYS.claimUid}=${claim.metadata.uid}`)).toEqual([]);
    expect(await kubectlGet('pods', `${SANDBOX_KEYS.claimUid}=${claim.metadata.uid}`)).toEqual([]);
  }, 90_000);

  it('answers 424 with the events of the claim’s pod when its sandbox never becomes ready, and leaves no claim', async () => {
    const runtime = await createReady(rt.control, 'sb_never_ready', 'slow-start', {
      environmentVariables: { START_DELAY_MS: '60000' },
    });
    const sid = sessionId('sb-never');
    const failed = await failureOf(invokeJson(rt.data, runtime.agentRuntimeArn!, sid, {}));
    expect(failed).toBeInstanceOf(RuntimeClientError);
    expect(failed.message).toMatch(/claim agentrt-c-[0-9a-f]{32}, Ready=False \(DependenciesNotReady: /);
    expect(failed.message).toMatch(/was not Ready within \d+ ms/);
    expect(failed.message).toMatch(/Events:\n(.*\n)*Normal Started: Started container agent/);
    expect(failed.message).toMatch(/slow-start: warming up for 60000 ms/);
    expect(await kubectlGet('sandboxclaims', `${LABELS.sessionHash}=${sessionHash(sid)}`)).toEqual([]);
  }, 60_000);

  it('answers 424 saying the claim was never bound when no controller answers it', async () => {
    const runtime = await createReady(rt.control, 'sb_unbound', 'counter');
    await cluster.controller.close();
    const sid = sessionId('sb-unbound');
    const failed = await failureOf(invokeJson(rt.data, runtime.agentRuntimeArn!, sid, {}));
    expect(failed).toBeInstanceOf(RuntimeClientError);
    expect(failed.message).toMatch(
      /Runtime initialization time exceeded: claim agentrt-c-[0-9a-f]{32} after \d+ ms: not bound to a sandbox with a pod; claim no Ready condition yet/,
    );
    expect(await kubectlGet('sandboxclaims', `${LABELS.sessionHash}=${sessionHash(sid)}`)).toEqual([]);
  }, 60_000);
});

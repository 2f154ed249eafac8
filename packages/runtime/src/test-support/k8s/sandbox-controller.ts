// An agent-sandbox controller for tests (never shipped): no real one can run here, so this one
// reconciles SandboxWarmPool, SandboxClaim and Sandbox objects into Sandboxes and Pods the way
// kubernetes-sigs/agent-sandbox's controllers do at 2fd412d55ecae90861a101a5424a75473de97c36
// (controllers/sandbox_controller.go, extensions/controllers/sandboxwarmpool_controller.go and
// sandboxclaim_controller.go: claim-reconciler.ts), writing the same names, labels, annotations,
// owner references and status fields, so that the pods really run on the test kubelet; PVCs from
// volumeClaimTemplates (the claim's merged by the template's policy). Left out: Services
// (spec.service), the template's NetworkPolicy, suspend (operatingMode), shutdownTime and TTL
// expiry, claim env injection and additionalPodMetadata.
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  type Informer,
  type KubernetesObject,
  PatchStrategy,
  type V1OwnerReference,
  type V1Pod,
  makeInformer,
  setHeaderOptions,
} from '@kubernetes/client-node';
import {
  EXTENSIONS_GROUP,
  SANDBOX_GROUP,
  SANDBOX_KEYS,
  SANDBOX_VERSION,
  type SandboxObject,
  nameHash,
} from '../../sessions/backends/kubernetes/sandbox-spec.js';
import {
  type ClaimTemplate,
  ClaimReconciler,
  type ControllerContext,
  KINDS,
  type Kind,
} from './claim-reconciler.js';
import {
  type Condition,
  blueprintOf,
  controllerOf,
  isTrue,
  keyOf,
  ownerRef,
  same,
  sandboxFinished,
  sandboxReady,
  setConditions,
} from './sandbox-status.js';

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** sandbox_types.go SandboxAdoptableLabel: an unowned PVC any sandbox may adopt. */
const ADOPTABLE = 'agents.x-k8s.io/adoptable';

export interface SandboxController {
  close(): Promise<void>;
}

class TestSandboxController implements SandboxController, ControllerContext {
  private readonly core: CoreV1Api;
  private readonly api: CustomObjectsApi;
  readonly informers: Record<Kind, ReturnType<typeof makeInformer<SandboxObject>>>;
  private readonly pods;
  /** Per object key: a reconcile running, and whether another was asked for meanwhile. */
  private readonly queue = new Map<string, { again: boolean }>();
  readonly popped = new Set<string>();
  private readonly claims = new ClaimReconciler(this);
  /** Pool sandboxes created and not yet seen by the informer (warmpool_expectations.go). */
  private readonly expected = new Map<string, Set<string>>();
  /** Each sandbox's last controller owner seen. */
  private readonly owners = new Map<string, V1OwnerReference>();
  private closed = false;

  constructor(kubeconfig: string) {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    this.core = kc.makeApiClient(CoreV1Api);
    this.api = kc.makeApiClient(CustomObjectsApi);
    const informerOf = (kind: Kind) => {
      const { group, plural } = KINDS[kind];
      const list = () => this.api.listClusterCustomObject({ group, version: SANDBOX_VERSION, plural });
      return makeInformer<SandboxObject>(kc, `/apis/${group}/${SANDBOX_VERSION}/${plural}`, list as never);
    };
    this.informers = {
      pools: informerOf('pools'),
      claims: informerOf('claims'),
      sandboxes: informerOf('sandboxes'),
      templates: informerOf('templates'),
    };
    this.pods = makeInformer(kc, '/api/v1/pods', () => this.core.listPodForAllNamespaces());
    this.wire();
  }

  private wire(): void {
    const on = <T extends KubernetesObject>(informer: Informer<T>, f: (o: T) => void) => {
      informer.on('add', f);
      informer.on('update', f);
      informer.on('delete', f);
    };
    on(this.informers.pools, (pool) => this.enqueue('pools', pool));
    on(this.informers.claims, (claim) => this.enqueue('claims', claim));
    on(this.informers.templates, () => {
      for (const pool of this.informers.pools.list()) this.enqueue('pools', pool);
    });
    on(this.informers.sandboxes, (sandbox) => {
      this.expected.forEach((names) => names.delete(sandbox.metadata.name));
      this.enqueue('sandboxes', sandbox);
      this.enqueueOwner(sandbox);
    });
    on(this.pods, (pod) => {
      const owner = controllerOf(pod);
      if (owner?.kind === 'Sandbox')
        this.enqueue('sandboxes', { metadata: { ...pod.metadata, name: owner.name } } as SandboxObject);
    });
    for (const informer of [...Object.values(this.informers), this.pods])
      informer.on('error', () => {
        if (!this.closed) setTimeout(() => void informer.start().catch(() => undefined), 200);
      });
  }

  /**
   * The sandbox's controller, and the one before it (controller-runtime's owner handler enqueues
   * both on an update): a pool hears that a claim adopted its member, and replenishes.
   */
  private enqueueOwner(sandbox: SandboxObject): void {
    const before = this.owners.get(keyOf(sandbox));
    const owner = controllerOf(sandbox);
    if (owner) this.owners.set(keyOf(sandbox), owner);
    if (before && before.uid !== owner?.uid) this.enqueueRef(sandbox, before);
    if (owner) this.enqueueRef(sandbox, owner);
  }

  private enqueueRef(sandbox: SandboxObject, owner: V1OwnerReference): void {
    const ns = sandbox.metadata.namespace;
    if (owner?.kind === 'SandboxClaim')
      this.enqueue('claims', { metadata: { name: owner.name, namespace: ns } } as SandboxObject);
    if (owner?.kind === 'SandboxWarmPool')
      this.enqueue('pools', { metadata: { name: owner.name, namespace: ns } } as SandboxObject);
  }

  start(): Promise<unknown> {
    return Promise.all([...Object.values(this.informers), this.pods].map((i) => i.start()));
  }

  /** Runs the object's reconcile; one per object at a time, a change meanwhile runs it once more. */
  enqueue(kind: Kind, object: SandboxObject, afterMs = 0): void {
    if (this.closed || kind === 'templates') return;
    const key = `${kind}:${keyOf(object)}`;
    if (afterMs > 0) return void setTimeout(() => this.enqueue(kind, object), afterMs).unref();
    const running = this.queue.get(key);
    if (running) return void (running.again = true);
    const state = { again: false };
    this.queue.set(key, state);
    const run = async (): Promise<void> => {
      const current = this.informers[kind].get(object.metadata.name, object.metadata.namespace);
      if (current && !current.metadata.deletionTimestamp)
        await this.reconcile(kind, current).catch(() => this.enqueue(kind, object, 200));
      if (state.again && !this.closed) {
        state.again = false;
        return run();
      }
      this.queue.delete(key);
    };
    void run();
  }

  private reconcile(kind: Kind, object: SandboxObject): Promise<void> {
    if (kind === 'pools') return this.reconcilePool(object);
    if (kind === 'claims') return this.claims.reconcile(object);
    return this.reconcileSandbox(object);
  }

  // --- Sandbox → Pod (controllers/sandbox_controller.go) ---------------------------------------

  private async reconcileSandbox(sandbox: SandboxObject): Promise<void> {
    const { name, namespace } = sandbox.metadata;
    const hash = nameHash(name);
    const podName = sandbox.metadata.annotations?.[SANDBOX_KEYS.podName] || name;
    await this.reconcilePVCs(sandbox, hash);
    let pod = this.pods.get(podName, namespace);
    if (!pod) pod = await this.createPod(sandbox, hash);
    else await this.updatePodMetadata(sandbox, pod);
    if (sandbox.metadata.annotations?.[SANDBOX_KEYS.podName] !== pod.metadata?.name)
      await this.patch('sandboxes', sandbox, {
        metadata: { annotations: { [SANDBOX_KEYS.podName]: pod.metadata?.name } },
      });
    const finished = sandboxFinished(pod);
    const status = {
      podIPs: pod.status?.podIPs?.map((p) => p.ip) ?? null,
      nodeName: pod.spec?.nodeName ?? null,
      selector: `${SANDBOX_KEYS.nameHash}=${hash}`,
      conditions: setConditions(sandbox.status?.conditions as Condition[], [
        sandboxReady(sandbox, pod),
        ...(finished ? [finished] : []),
      ]),
    };
    await this.patchStatus('sandboxes', sandbox, status);
  }

  /**
   * reconcilePVCs: each volumeClaimTemplate's PVC `<name>-<sandbox>`, owned by the sandbox and
   * labelled with its name hash; an unowned one is adopted when it carries that label (or
   * `adoptable`), one another controller owns is refused.
   */
  private async reconcilePVCs(sandbox: SandboxObject, hash: string): Promise<void> {
    const { namespace } = sandbox.metadata;
    const owner = {
      ...ownerRef('Sandbox', SANDBOX_GROUP, sandbox),
      apiVersion: `${SANDBOX_GROUP}/${SANDBOX_VERSION}`,
    };
    for (const vct of (sandbox.spec?.volumeClaimTemplates ?? []) as ClaimTemplate[]) {
      const name = `${vct.metadata.name ?? ''}-${sandbox.metadata.name}`;
      const found = await this.core
        .readNamespacedPersistentVolumeClaim({ name, namespace })
        .catch((e: unknown) => {
          if ((e as { code?: number }).code === 404) return undefined;
          throw e;
        });
      const controller = found?.metadata?.ownerReferences?.find((o) => o.controller);
      const labels = found?.metadata?.labels ?? {};
      if (controller && controller.uid !== sandbox.metadata.uid)
        throw new Error(
          `PVC ${name} is owned by ${controller.kind}/${controller.name}, not by sandbox ${sandbox.metadata.name}`,
        );
      if (found && !controller && labels[SANDBOX_KEYS.nameHash] !== hash && labels[ADOPTABLE] !== 'true')
        throw new Error(
          `cannot adopt unowned PVC ${name}: it has neither ${ADOPTABLE} nor ${SANDBOX_KEYS.nameHash}`,
        );
      const body = { metadata: { ownerReferences: [owner] } };
      if (found && !controller)
        await this.core.patchNamespacedPersistentVolumeClaim({ name, namespace, body }, merge);
      if (found) continue;
      const metadata = {
        name,
        namespace,
        labels: { ...vct.metadata.labels, [SANDBOX_KEYS.nameHash]: hash },
        annotations: vct.metadata.annotations,
        ownerReferences: [owner],
      };
      await this.core.createNamespacedPersistentVolumeClaim({
        namespace,
        body: { metadata, spec: vct.spec },
      });
    }
  }

  private async createPod(sandbox: SandboxObject, hash: string): Promise<V1Pod> {
    const template = (sandbox.spec?.podTemplate ?? {}) as {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec?: { volumes?: { name: string }[] };
    };
    // MergeVolumeClaimVolumes: each volumeClaimTemplate's PVC as the volume of its name (replacing one).
    const claimVolumes = ((sandbox.spec?.volumeClaimTemplates ?? []) as ClaimTemplate[]).map((v) => ({
      name: v.metadata.name ?? '',
      persistentVolumeClaim: { claimName: `${v.metadata.name ?? ''}-${sandbox.metadata.name}` },
    }));
    const volumes = [
      ...(template.spec?.volumes ?? []).filter((v) => !claimVolumes.some((c) => c.name === v.name)),
      ...claimVolumes,
    ];
    const body = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: sandbox.metadata.name,
        namespace: sandbox.metadata.namespace,
        labels: { ...template.metadata?.labels, [SANDBOX_KEYS.nameHash]: hash },
        annotations: { ...template.metadata?.annotations },
        ownerReferences: [
          {
            ...ownerRef('Sandbox', SANDBOX_GROUP, sandbox),
            apiVersion: `${SANDBOX_GROUP}/${SANDBOX_VERSION}`,
          },
        ],
      },
      spec: { ...template.spec, ...(volumes.length > 0 ? { volumes } : {}) },
    } as unknown as V1Pod;
    return this.core
      .createNamespacedPod({ namespace: sandbox.metadata.namespace, body })
      .catch(async (error: unknown) => {
        if ((error as { code?: number }).code !== 409) throw error;
        return this.core.readNamespacedPod({
          name: sandbox.metadata.name,
          namespace: sandbox.metadata.namespace,
        });
      });
  }

  /** updatePodMetadata: the pod's labels follow its sandbox's pod template (an adopted sandbox's claim-uid). */
  private async updatePodMetadata(sandbox: SandboxObject, pod: V1Pod): Promise<void> {
    const wanted =
      (sandbox.spec?.podTemplate as { metadata?: { labels?: Record<string, string> } })?.metadata?.labels ??
      {};
    const labels: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(wanted)) if (pod.metadata?.labels?.[k] !== v) labels[k] = v;
    for (const k of Object.keys(pod.metadata?.labels ?? {}))
      if (k.startsWith('agents.x-k8s.io/') && k !== SANDBOX_KEYS.nameHash && !(k in wanted)) labels[k] = null;
    if (Object.keys(labels).length === 0) return;
    const { name, namespace } = pod.metadata as { name: string; namespace: string };
    await this.core.patchNamespacedPod({ name, namespace, body: { metadata: { labels } } }, merge);
  }

  // --- SandboxWarmPool → Sandboxes (extensions/controllers/sandboxwarmpool_controller.go) -------

  /** The pool's live members: its label (NameHash of its name), the pool their controller. */
  members(pool: SandboxObject): SandboxObject[] {
    const hash = nameHash(pool.metadata.name);
    return this.informers.sandboxes
      .list(pool.metadata.namespace)
      .filter(
        (s) =>
          s.metadata.labels?.[SANDBOX_KEYS.warmPool] === hash &&
          controllerOf(s)?.uid === pool.metadata.uid &&
          !s.metadata.deletionTimestamp,
      );
  }

  private async reconcilePool(pool: SandboxObject): Promise<void> {
    const hash = nameHash(pool.metadata.name);
    const members = this.members(pool);
    const pending = this.expected.get(keyOf(pool)) ?? new Set<string>();
    this.expected.set(keyOf(pool), pending);
    const desired = (pool.spec?.replicas as number | undefined) ?? 1;
    const templateName = (pool.spec?.sandboxTemplateRef as { name: string }).name;
    const template = this.informers.templates.get(templateName, pool.metadata.namespace);
    for (let n = members.length + pending.size; template && n < desired; n++)
      pending.add(await this.createPoolSandbox(pool, template, hash));
    const extra = members.length - desired;
    if (extra > 0)
      await this.trim(
        members.filter((s) => !this.popped.has(keyOf(s))),
        extra,
      );
    const status = {
      replicas: members.length,
      readyReplicas: members.filter((s) => isTrue(s, 'Ready')).length,
      selector: `${SANDBOX_KEYS.warmPool}=${hash}`,
      observedGeneration: (pool.metadata as { generation?: number }).generation,
    };
    await this.patchStatus('pools', pool, status);
  }

  /** buildSandboxCR: a warm sandbox named `<pool>-<5 random>`, owned by the pool. */
  private async createPoolSandbox(
    pool: SandboxObject,
    template: SandboxObject,
    hash: string,
  ): Promise<string> {
    const refHash = nameHash(template.metadata.name);
    const labels = { [SANDBOX_KEYS.warmPool]: hash, [SANDBOX_KEYS.templateRefHash]: refHash };
    const body = {
      apiVersion: `${SANDBOX_GROUP}/${SANDBOX_VERSION}`,
      kind: 'Sandbox',
      metadata: {
        generateName: `${pool.metadata.name}-`,
        namespace: pool.metadata.namespace,
        labels: { ...labels, [SANDBOX_KEYS.launchType]: 'warm', 'agents.x-k8s.io/created-by': 'controller' },
        annotations: { [SANDBOX_KEYS.templateRef]: template.metadata.name },
        ownerReferences: [ownerRef('SandboxWarmPool', EXTENSIONS_GROUP, pool)],
      },
      spec: blueprintOf(template, labels),
    };
    return (await this.create('sandboxes', pool, body)).metadata.name;
  }

  /** Scale down: not-ready members first, then the newest. */
  private async trim(members: SandboxObject[], count: number): Promise<void> {
    const order = [...members].sort(
      (a, b) =>
        Number(isTrue(a, 'Ready')) - Number(isTrue(b, 'Ready')) ||
        String(b.metadata.creationTimestamp).localeCompare(String(a.metadata.creationTimestamp)),
    );
    for (const sandbox of order.slice(0, count))
      await this.api
        .deleteNamespacedCustomObject({ ...this.where('sandboxes', sandbox), name: sandbox.metadata.name })
        .catch(() => undefined);
  }

  // --- API -------------------------------------------------------------------------------------

  async create(kind: Kind, owner: SandboxObject, body: object): Promise<SandboxObject> {
    return (await this.api.createNamespacedCustomObject({
      ...this.where(kind, owner),
      body,
    })) as SandboxObject;
  }

  private where(kind: Kind, object: SandboxObject) {
    const { group, plural } = KINDS[kind];
    return { group, version: SANDBOX_VERSION, namespace: object.metadata.namespace, plural };
  }

  async patch(kind: Kind, object: SandboxObject, body: object): Promise<SandboxObject> {
    const name = object.metadata.name;
    return (await this.api.patchNamespacedCustomObject(
      { ...this.where(kind, object), name, body },
      merge,
    )) as SandboxObject;
  }

  /** Writes status only when it changed (as the controllers compare before updateStatus). */
  async patchStatus(kind: Kind, object: SandboxObject, status: Record<string, unknown>): Promise<void> {
    const before = Object.fromEntries(
      Object.keys(status).map((k) => [
        k,
        (object.status as Record<string, unknown> | undefined)?.[k] ?? null,
      ]),
    );
    const after = Object.fromEntries(Object.entries(status).map(([k, v]) => [k, v ?? null]));
    if (same(before, after)) return;
    const name = object.metadata.name;
    await this.api.patchNamespacedCustomObjectStatus(
      { ...this.where(kind, object), name, body: { status } },
      merge,
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...Object.values(this.informers), this.pods].map((i) => i.stop()));
  }
}

/** Starts the controller against the API server of `kubeconfig` (the CRDs must be created first). */
export async function startSandboxController(options: { kubeconfig: string }): Promise<SandboxController> {
  const controller = new TestSandboxController(options.kubeconfig);
  await controller.start();
  return controller;
}

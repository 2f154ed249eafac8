// The test agent-sandbox controller's SandboxClaim reconciler, as
// extensions/controllers/sandboxclaim_controller.go at agent-sandbox@2fd412d binds a claim: the
// sandbox it adopted or made already (annotation, status, or the claim's own name), else a warm
// pool member with a pod IP (waited for 500 ms at a time, 2 s at most; three tried, the claim
// annotated under its resourceVersion first), else a cold sandbox named as the claim. The claim's
// Ready condition and status.sandbox follow the sandbox's.
import { type makeInformer } from '@kubernetes/client-node';
import {
  EXTENSIONS_GROUP,
  SANDBOX_GROUP,
  SANDBOX_KEYS,
  SANDBOX_VERSION,
  type SandboxObject,
  nameHash,
} from '../../sessions/backends/kubernetes/sandbox-spec.js';
import {
  type Condition,
  blueprintOf,
  controllerOf,
  keyOf,
  ownerRef,
  setConditions,
} from './sandbox-status.js';

/** sandbox_types.go: labels the warm pool stamps with template hashes (dropped on adoption). */
const TEMPLATE_HASH_LABELS = [
  'agents.x-k8s.io/sandbox-pod-template-hash',
  'agents.x-k8s.io/sandbox-template-hash',
];
/** sandboxclaim_controller.go (PR #683): a candidate without a pod IP is waited for 500 ms at a time, 2 s at most. */
const CANDIDATE_WAIT_MS = { step: 500, max: 2000 };
/** Warm candidates tried before a cold start. */
const ADOPTION_TRIES = 3;

export type Kind = 'pools' | 'claims' | 'sandboxes' | 'templates';
export const KINDS: Record<Kind, { group: string; plural: string }> = {
  pools: { group: EXTENSIONS_GROUP, plural: 'sandboxwarmpools' },
  claims: { group: EXTENSIONS_GROUP, plural: 'sandboxclaims' },
  templates: { group: EXTENSIONS_GROUP, plural: 'sandboxtemplates' },
  sandboxes: { group: SANDBOX_GROUP, plural: 'sandboxes' },
};

/** What a reconciler reads and writes through the controller: its informers, queue and API calls. */
export interface ControllerContext {
  readonly informers: Record<Kind, ReturnType<typeof makeInformer<SandboxObject>>>;
  /** Warm sandboxes a claim is adopting (the upstream WarmSandboxQueue pops them): no other claim tries them. */
  readonly popped: Set<string>;
  /** The pool's live members. */
  members(pool: SandboxObject): SandboxObject[];
  enqueue(kind: Kind, object: SandboxObject, afterMs?: number): void;
  patch(kind: Kind, object: SandboxObject, body: object): Promise<SandboxObject>;
  patchStatus(kind: Kind, object: SandboxObject, status: Record<string, unknown>): Promise<void>;
  /** Creates an object of `kind` in `owner`'s namespace. */
  create(kind: Kind, owner: SandboxObject, body: object): Promise<SandboxObject>;
}

/** A PersistentVolumeClaimTemplate (sandbox_types.go): the PVC `<name>-<sandbox>` is made from it. */
export interface ClaimTemplate {
  metadata: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
}

const templatesOf = (object: SandboxObject) => (object.spec?.volumeClaimTemplates ?? []) as ClaimTemplate[];
const bypassesPool = (claim: SandboxObject) =>
  ((claim.spec?.env as unknown[] | undefined)?.length ?? 0) > 0 || templatesOf(claim).length > 0;

/**
 * mergeVolumeClaimTemplates: the template's volumeClaimTemplates and the claim's, as the template's
 * volumeClaimTemplatesPolicy allows (Disallowed, the default: none from a claim; Allowed: added, not
 * replacing one of the template's; Overrides: replacing by name); a string says why not.
 */
function mergedClaimTemplates(template: SandboxObject, claim: SandboxObject): ClaimTemplate[] | string {
  const own = templatesOf(template);
  const extra = templatesOf(claim);
  if (extra.length === 0) return own;
  const names = (list: ClaimTemplate[]) => list.map((v) => v.metadata.name ?? '');
  if (names(extra).some((n, i, all) => !n || all.indexOf(n) !== i))
    return 'invalid volume claim templates: a name is empty or repeated';
  const policy = (template.spec?.volumeClaimTemplatesPolicy as string | undefined) ?? 'Disallowed';
  const clash = names(extra).find((n) => names(own).includes(n));
  if (policy === 'Allowed' && clash)
    return `overriding volume claim templates is forbidden by the template: cannot override template volume "${clash}"`;
  if (policy === 'Allowed') return [...own, ...extra];
  if (policy === 'Overrides')
    return [
      ...own.map((v) => extra.find((e) => e.metadata.name === v.metadata.name) ?? v),
      ...extra.filter((e) => !names(own).includes(e.metadata.name ?? '')),
    ];
  return 'volume claim templates are disallowed by the template';
}

export class ClaimReconciler {
  constructor(private readonly c: ControllerContext) {}

  async reconcile(claim: SandboxObject): Promise<void> {
    if (claim.metadata.deletionTimestamp) return; // being deleted: left to its finalizers, as upstream
    const ns = claim.metadata.namespace;
    const pool = this.c.informers.pools.get((claim.spec?.warmPoolRef as { name: string }).name, ns);
    const template =
      pool && this.c.informers.templates.get((pool.spec?.sandboxTemplateRef as { name: string }).name, ns);
    let sandbox: SandboxObject | undefined | 'wait' = this.boundSandbox(claim);
    let error: Condition | undefined;
    if (!pool)
      error = {
        type: 'Ready',
        status: 'False',
        reason: 'WarmPoolNotFound',
        message: `SandboxWarmPool "${(claim.spec?.warmPoolRef as { name: string }).name}" not found`,
      };
    else if (!template)
      error = {
        type: 'Ready',
        status: 'False',
        reason: 'TemplateNotFound',
        message: 'SandboxTemplate of the warm pool not found',
      };
    else if (!sandbox) {
      const volumes = mergedClaimTemplates(template, claim);
      if (typeof volumes === 'string')
        error = { type: 'Ready', status: 'False', reason: 'VolumeClaimTemplatesError', message: volumes };
      // A claim with env or volumeClaimTemplates bypasses the warm pool: those are baked in at creation.
      else
        sandbox =
          (bypassesPool(claim) ? undefined : await this.adopt(claim, pool, template)) ??
          (await this.createClaimSandbox(claim, template, volumes));
    }
    if (sandbox === 'wait') return this.c.enqueue('claims', claim, CANDIDATE_WAIT_MS.step);
    const ready =
      error ??
      (sandbox
        ? ({
            ...(sandbox.status?.conditions?.find((c) => c.type === 'Ready') ?? {
              type: 'Ready',
              status: 'False',
              reason: 'SandboxNotReady',
              message: 'Sandbox is not ready',
            }),
          } as Condition)
        : undefined);
    const conditions = setConditions(
      claim.status?.conditions as Condition[],
      ready ? [{ ...ready, observedGeneration: (claim.metadata as { generation?: number }).generation }] : [],
    );
    await this.c.patchStatus('claims', claim, {
      conditions,
      sandbox: sandbox ? { name: sandbox.metadata.name, podIPs: sandbox.status?.podIPs ?? null } : null,
    });
  }

  /** The sandbox the claim adopted or made, once it is its controller. */
  private boundSandbox(claim: SandboxObject): SandboxObject | undefined {
    const ns = claim.metadata.namespace;
    for (const name of [
      claim.metadata.annotations?.[SANDBOX_KEYS.sandboxName],
      claim.status?.sandbox?.name,
      claim.metadata.name,
    ]) {
      const sandbox = name ? this.c.informers.sandboxes.get(name, ns) : undefined;
      if (sandbox && controllerOf(sandbox)?.uid === claim.metadata.uid) return sandbox;
    }
    return undefined;
  }

  /** getCandidate + completeAdoption: a warm member with a pod IP, the claim annotated first, then the sandbox moved. */
  private async adopt(
    claim: SandboxObject,
    pool: SandboxObject,
    template: SandboxObject,
  ): Promise<SandboxObject | 'wait' | undefined> {
    const members = this.c.members(pool).filter((s) => !this.c.popped.has(keyOf(s)));
    const withIp = members.filter((s) => (s.status?.podIPs?.length ?? 0) > 0);
    const ageMs = Date.now() - new Date(claim.metadata.creationTimestamp ?? Date.now()).getTime();
    if (withIp.length === 0 && members.length > 0 && ageMs < CANDIDATE_WAIT_MS.max) return 'wait';
    for (const candidate of withIp.slice(0, ADOPTION_TRIES)) {
      this.c.popped.add(keyOf(candidate));
      const adopted = await this.completeAdoption(claim, candidate, template).finally(() =>
        this.c.popped.delete(keyOf(candidate)),
      );
      if (adopted) return adopted;
    }
    return undefined;
  }

  private async completeAdoption(
    claim: SandboxObject,
    sandbox: SandboxObject,
    template: SandboxObject,
  ): Promise<SandboxObject | undefined> {
    const annotate = {
      metadata: {
        resourceVersion: claim.metadata.resourceVersion,
        annotations: { [SANDBOX_KEYS.sandboxName]: sandbox.metadata.name },
      },
    };
    if (
      !(await this.c.patch('claims', claim, annotate).then(
        () => true,
        () => false,
      ))
    )
      return undefined;
    const refHash = nameHash(template.metadata.name);
    const podLabels = {
      ...((template.spec?.podTemplate as { metadata?: { labels?: Record<string, string> } })?.metadata
        ?.labels ?? {}),
      [SANDBOX_KEYS.claimUid]: claim.metadata.uid as string,
      [SANDBOX_KEYS.templateRefHash]: refHash,
    };
    const labels: Record<string, string | null> = {
      [SANDBOX_KEYS.warmPool]: null,
      [SANDBOX_KEYS.launchType]: 'warm',
      [SANDBOX_KEYS.claimUid]: claim.metadata.uid as string,
      [SANDBOX_KEYS.templateRefHash]: refHash,
    };
    for (const l of TEMPLATE_HASH_LABELS) labels[l] = null;
    // A merge patch merges maps: the pool's labels the template does not have are removed by name.
    const oldLabels =
      (sandbox.spec?.podTemplate as { metadata?: { labels?: Record<string, string> } })?.metadata?.labels ??
      {};
    const dropped = Object.fromEntries(
      Object.keys(oldLabels)
        .filter((k) => !(k in podLabels))
        .map((k) => [k, null]),
    );
    const podTemplate = {
      ...(sandbox.spec?.podTemplate as object),
      metadata: {
        ...((template.spec?.podTemplate as { metadata?: object })?.metadata ?? {}),
        labels: { ...dropped, ...podLabels },
      },
    };
    const body = {
      metadata: {
        resourceVersion: sandbox.metadata.resourceVersion,
        labels,
        annotations: { [SANDBOX_KEYS.podName]: sandbox.metadata.name },
        ownerReferences: [ownerRef('SandboxClaim', EXTENSIONS_GROUP, claim)],
      },
      spec: { podTemplate },
    };
    return this.c.patch('sandboxes', sandbox, body).then(
      (s) => s,
      async () => {
        // removeAssignedSandboxReference: the adoption lost a race; the claim names no sandbox again.
        const fresh = this.c.informers.claims.get(claim.metadata.name, claim.metadata.namespace) ?? claim;
        await this.c
          .patch('claims', fresh, {
            metadata: { annotations: { [SANDBOX_KEYS.sandboxName]: null } },
          })
          .catch(() => undefined);
        return undefined;
      },
    );
  }

  /** createSandbox: cold start, a sandbox named as the claim, owned by it. */
  private async createClaimSandbox(
    claim: SandboxObject,
    template: SandboxObject,
    volumes: ClaimTemplate[],
  ): Promise<SandboxObject> {
    const refHash = nameHash(template.metadata.name);
    const identity = {
      [SANDBOX_KEYS.claimUid]: claim.metadata.uid as string,
      [SANDBOX_KEYS.templateRefHash]: refHash,
    };
    const body = {
      apiVersion: `${SANDBOX_GROUP}/${SANDBOX_VERSION}`,
      kind: 'Sandbox',
      metadata: {
        name: claim.metadata.name,
        namespace: claim.metadata.namespace,
        labels: { ...identity, [SANDBOX_KEYS.launchType]: 'cold' },
        annotations: { [SANDBOX_KEYS.templateRef]: template.metadata.name },
        ownerReferences: [ownerRef('SandboxClaim', EXTENSIONS_GROUP, claim)],
      },
      spec: {
        ...blueprintOf(template, identity),
        ...(volumes.length > 0 ? { volumeClaimTemplates: volumes } : {}),
      },
    };
    return this.c.create('sandboxes', claim, body);
  }
}

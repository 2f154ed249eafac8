import { type PinnedArtifact } from '../sessions/artifact.js';

export type RuntimeStatus =
  'CREATING' | 'CREATE_FAILED' | 'UPDATING' | 'UPDATE_FAILED' | 'READY' | 'DELETING' | 'DELETE_FAILED';

/** Everything a version fixes; stored as given (plus the effective lifecycle) and echoed by Get. */
export interface VersionConfig {
  agentRuntimeArtifact: { containerConfiguration?: { containerUri: string }; [k: string]: unknown };
  roleArn: string;
  networkConfiguration: { networkMode: string; [k: string]: unknown };
  lifecycleConfiguration: { idleRuntimeSessionTimeout: number; maxLifetime: number };
  description?: string;
  authorizerConfiguration?: { customJWTAuthorizer?: JwtAuthorizerConfig };
  requestHeaderConfiguration?: { requestHeaderAllowlist?: string[] };
  protocolConfiguration?: { serverProtocol: string };
  metadataConfiguration?: { requireMMDSV2: boolean };
  environmentVariables?: Record<string, string>;
  filesystemConfigurations?: unknown[];
  capacityProviderConfiguration?: { capacityProviderArn: string };
  platformVersion?: string;
}

export interface JwtAuthorizerConfig {
  discoveryUrl: string;
  allowedAudience?: string[];
  allowedClients?: string[];
  allowedScopes?: string[];
}

export interface RuntimeRecord {
  id: string;
  name: string;
  arn: string;
  latestVersion: number;
  status: RuntimeStatus;
  failureReason?: string;
  createdAt: string;
  lastUpdatedAt: string;
  workloadIdentityArn: string;
}

export interface VersionRecord {
  runtimeId: string;
  version: number;
  config: VersionConfig;
  /** What the version runs, fixed once its artifact checked out (absent: a live directory). */
  artifact?: PinnedArtifact;
  status: RuntimeStatus;
  failureReason?: string;
  createdAt: string;
}

export interface EndpointRecord {
  runtimeId: string;
  name: string;
  id: string;
  arn: string;
  liveVersion?: number;
  targetVersion: number;
  description?: string;
  status: RuntimeStatus;
  failureReason?: string;
  createdAt: string;
  lastUpdatedAt: string;
}

/** One filter of an online evaluation rule: a span attribute compared with a value. */
export interface OnlineEvaluationFilter {
  key: string;
  operator:
    | 'Equals'
    | 'NotEquals'
    | 'GreaterThan'
    | 'LessThan'
    | 'GreaterThanOrEqual'
    | 'LessThanOrEqual'
    | 'Contains'
    | 'NotContains';
  value: { stringValue?: string; doubleValue?: number; booleanValue?: boolean };
}

/** An online evaluation rule (CreateOnlineEvaluationConfig), run by the runtime that holds it. */
export interface OnlineEvaluationRecord {
  id: string;
  name: string;
  arn: string;
  description?: string;
  samplingPercentage: number;
  filters: OnlineEvaluationFilter[];
  sessionTimeoutMinutes: number;
  /** Only sessions with a span of one of these services (`service.name`). */
  serviceNames: string[];
  evaluatorIds: string[];
  executionStatus: 'ENABLED' | 'DISABLED';
  createdAt: string;
  updatedAt: string;
}

export interface Kinds {
  runtime: RuntimeRecord;
  version: VersionRecord;
  endpoint: EndpointRecord;
  tags: Record<string, string>;
  idempotency: { fingerprint: string; response: unknown };
  onlineEvaluation: OnlineEvaluationRecord;
}

export type Kind = keyof Kinds;

/**
 * The control plane's state: records as JSON documents keyed by kind and id, with a parent (the
 * runtime id) and an order for paging. One interface, two implementations (store/sqlite-store.ts:
 * one SQLite file; store/kubernetes-store.ts: agentrt.dev/v1 custom resources shared by every
 * runtime replica), one contract suite (store/store-contract.ts).
 *
 * Reads are synchronous, from memory (every invoke reads its runtime and version): the SQLite
 * store's write-through cache, the Kubernetes store's watch-fed cache. Writes resolve once durable
 * (in the file; acknowledged by the API server) and are then visible to this store's reads at once,
 * and to other replicas' stores once their watch delivers them.
 */
export interface Store {
  get<K extends Kind>(kind: K, id: string): Kinds[K] | undefined;
  put<K extends Kind>(kind: K, id: string, doc: Kinds[K], parent?: string, ord?: number): Promise<void>;
  delete(kind: Kind, id: string): Promise<void>;
  /** Deletes every record whose parent is `parent` (a runtime's versions, endpoints and tags). */
  deleteChildren(parent: string): Promise<void>;
  list<K extends Kind>(kind: K, options: { parent?: string; offset: number; limit: number }): Kinds[K][];
  count(kind: Kind, parent?: string): number;
  close(): Promise<void>;
}

/** A write the store refused because another writer got there first (another replica). */
export class StoreConflictError extends Error {
  override name = 'StoreConflictError';
}

// The object model of the test Kubernetes API server (test-support only): objects as the API
// returns them, the Status errors it answers with, and the metadata it stamps on a new object.
import { randomBytes, randomUUID } from 'node:crypto';

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  generateName?: string;
  namespace?: string;
  uid: string;
  resourceVersion: string;
  generation?: number;
  creationTimestamp: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: unknown;
  status?: unknown;
  [field: string]: unknown;
}

export type StatusReason =
  | 'BadRequest'
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Forbidden'
  | 'Invalid'
  | 'Gone'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'UnsupportedMediaType'
  | 'RequestEntityTooLarge'
  | 'Unauthorized'
  | 'InternalError';

const CODES: Record<StatusReason, number> = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  NotAcceptable: 406,
  Conflict: 409,
  AlreadyExists: 409,
  Gone: 410,
  RequestEntityTooLarge: 413,
  UnsupportedMediaType: 415,
  Invalid: 422,
  InternalError: 500,
};

/** An API error: answered as a `Status` object with its HTTP code, as kube-apiserver does. */
export class KubeError extends Error {
  override name = 'KubeError';
  readonly code: number;
  constructor(
    readonly reason: StatusReason,
    message: string,
    readonly details?: {
      name?: string;
      group?: string;
      kind?: string;
      causes?: { reason: string; message: string; field?: string }[];
    },
  ) {
    super(message);
    this.code = CODES[reason];
  }

  status(): Record<string, unknown> {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

/** A `Status` of success (DELETE of a collection, exec's end). */
export function successStatus(details?: Record<string, unknown>): Record<string, unknown> {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    ...(details ? { details } : {}),
  };
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** kube-apiserver's name rule for most kinds: a DNS-1123 subdomain of at most 253 characters. */
export function checkName(name: unknown, kind: string): string {
  if (typeof name !== 'string' || name === '')
    throw new KubeError('Invalid', `${kind} metadata.name: Required value: name or generateName is required`);
  if (name.length > 253 || !DNS1123_SUBDOMAIN.test(name))
    throw new KubeError(
      'Invalid',
      `${kind} "${name}" is invalid: metadata.name: Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
      { name, kind },
    );
  return name;
}

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_NAME =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** Labels as kube-apiserver accepts them: qualified names, values of at most 63 characters. */
export function checkLabels(labels: unknown, kind: string): void {
  if (labels === undefined) return;
  if (typeof labels !== 'object' || labels === null || Array.isArray(labels))
    throw new KubeError('BadRequest', `${kind} metadata.labels must be an object of strings`);
  for (const [key, value] of Object.entries(labels)) {
    if (typeof value !== 'string' || value.length > 63 || !LABEL_VALUE.test(value))
      throw new KubeError('Invalid', `${kind} metadata.labels: Invalid value: "${String(value)}" for ${key}`);
    const name = key.split('/').pop() ?? '';
    if (key.length > 316 || name.length > 63 || !LABEL_NAME.test(key))
      throw new KubeError(
        'Invalid',
        `${kind} metadata.labels: Invalid value: "${key}": name part must be a qualified name`,
      );
  }
}

/** `generateName` + five random characters, as the API server names it. */
export function generatedName(prefix: string): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  const bytes = randomBytes(5);
  return prefix + Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
}

export function newUid(): string {
  return randomUUID();
}

/** RFC 3339 to the second, as metav1.Time is serialized. */
export function timestamp(ms = Date.now()): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export function clone<T>(value: T): T {
  return structuredClone(value);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

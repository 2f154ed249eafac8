// Offline validation of Kubernetes objects: built-in kinds against the Kubernetes OpenAPI schemas
// (kubernetes-models' validators, generated from the 1.34+ spec: it carries resource.k8s.io/v1 and
// PodCertificateProjection, both new in 1.34), with fields the API does not know found by
// @kubernetes/client-node's own generated models (their serializer drops what they do not know);
// custom resources against their CRD's openAPIV3Schema with ajv, unknown fields refused where the
// API server would prune them.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { dumpYaml, loadYaml } from '@kubernetes/client-node';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import * as apiextensions from 'kubernetes-models/apiextensions.k8s.io/v1';
import * as apps from 'kubernetes-models/apps/v1';
import * as coordination from 'kubernetes-models/coordination.k8s.io/v1';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';
import * as policy from 'kubernetes-models/policy/v1';
import * as rbac from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import * as core from 'kubernetes-models/v1';
import { parseAllDocuments, stringify } from 'yaml';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

type Model = new (data: never) => { validate(): void };
/** The built-in kinds agentrt's manifests and its backend use, by `apiVersion/kind`. */
const MODELS: Record<string, Model> = {
  'v1/Namespace': core.Namespace,
  'v1/ServiceAccount': core.ServiceAccount,
  'v1/Secret': core.Secret,
  'v1/ConfigMap': core.ConfigMap,
  'v1/Service': core.Service,
  'v1/Pod': core.Pod,
  'v1/PersistentVolumeClaim': core.PersistentVolumeClaim,
  'apps/v1/Deployment': apps.Deployment,
  'policy/v1/PodDisruptionBudget': policy.PodDisruptionBudget,
  'rbac.authorization.k8s.io/v1/Role': rbac.Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': rbac.RoleBinding,
  'networking.k8s.io/v1/NetworkPolicy': networking.NetworkPolicy,
  'coordination.k8s.io/v1/Lease': coordination.Lease,
  'apiextensions.k8s.io/v1/CustomResourceDefinition': apiextensions.CustomResourceDefinition,
};

/** Every document of a YAML text (empty documents skipped). */
export function parseObjects(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((doc) => doc.toJS() as KubeObject | null)
    .filter((doc): doc is KubeObject => doc !== null);
}

/** `kubectl kustomize <dir>` (dir from the repo root): what `kubectl apply -k <dir>` sends. */
export function kustomize(dir: string): KubeObject[] {
  const path = new URL(`../../../${dir}`, import.meta.url).pathname;
  return parseObjects(execFileSync('kubectl', ['kustomize', path], { encoding: 'utf8' }));
}

/** Paths of `original` that `kept` lacks. */
function droppedPaths(original: unknown, kept: unknown, path: string): string[] {
  if (typeof original !== 'object' || original === null) return [];
  if (typeof kept !== 'object' || kept === null) return [path];
  const problems: string[] = [];
  for (const [key, value] of Object.entries(original)) {
    const here = Array.isArray(original) ? `${path}[${key}]` : `${path}.${key}`;
    if (!(key in kept)) problems.push(here);
    else problems.push(...droppedPaths(value, (kept as Record<string, unknown>)[key], here));
  }
  return problems;
}

/** What is wrong with a built-in object: schema errors, and fields the API does not know. */
function builtinProblems(object: KubeObject, model: Model): string[] {
  const problems: string[] = [];
  try {
    new model(object as never).validate();
  } catch (error) {
    problems.push((error as Error).message);
  }
  const roundTrip = parseObjects(dumpYaml(loadYaml(stringify(object))))[0];
  for (const path of droppedPaths(object, roundTrip, ''))
    problems.push(`${path.slice(1)}: unknown field (the API would drop it)`);
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Custom resources.

type Schema = Record<string, unknown>;
interface CrdVersion {
  name: string;
  schema: { openAPIV3Schema: Schema };
}
interface Crd extends KubeObject {
  spec: { group: string; names: { kind: string }; versions: CrdVersion[] };
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/**
 * ajv with the OpenAPI formats and the Kubernetes schema extensions CRDs use (strict, but an
 * int-or-string node has a `pattern` and no `type`, as the API server allows).
 */
function crdAjv(): Ajv {
  const ajv = addFormats(new Ajv({ allErrors: true, strict: true, strictTypes: false }));
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && Math.abs(n) < 2 ** 31,
  });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
  for (const keyword of [
    'x-kubernetes-preserve-unknown-fields',
    'x-kubernetes-int-or-string',
    'x-kubernetes-list-type',
    'x-kubernetes-list-map-keys',
    'x-kubernetes-map-type',
    'x-kubernetes-embedded-resource',
    // CEL rules: evaluated by the API server only (not checked offline).
    'x-kubernetes-validations',
  ])
    ajv.addKeyword(keyword);
  return ajv;
}

/** The schema as the API server applies it: an object's unknown fields are refused (pruned there). */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema))
    out[key] =
      key === 'properties'
        ? Object.fromEntries(Object.entries(value as Schema).map(([k, v]) => [k, closed(v)]))
        : closed(value);
  const open = out['x-kubernetes-preserve-unknown-fields'] === true || out.additionalProperties !== undefined;
  if (out.properties && !open) out.additionalProperties = false;
  return out;
}

/**
 * Why a CRD's schema is not structural (the rule apiextensions v1 enforces): every node names its
 * type, unless it is int-or-string or keeps unknown fields; properties and additionalProperties never together.
 */
export function structuralProblems(schema: Schema, path = ''): string[] {
  const problems: string[] = [];
  const free =
    schema['x-kubernetes-int-or-string'] === true || schema['x-kubernetes-preserve-unknown-fields'] === true;
  if (schema.type === undefined && !free) problems.push(`${path || '.'}: no type`);
  if (schema.properties && typeof schema.additionalProperties === 'object')
    problems.push(`${path}: properties and additionalProperties together`);
  for (const [name, sub] of Object.entries((schema.properties as Record<string, Schema> | undefined) ?? {}))
    problems.push(...structuralProblems(sub, `${path}.${name}`));
  if (typeof schema.items === 'object')
    problems.push(...structuralProblems(schema.items as Schema, `${path}[]`));
  if (typeof schema.additionalProperties === 'object')
    problems.push(...structuralProblems(schema.additionalProperties as Schema, `${path}{}`));
  return problems;
}

/** Validators of every version of every CRD in `dirs`, by `group/version/kind`. */
export function loadCrds(...files: string[]): Map<string, ValidateFunction> {
  const ajv = crdAjv();
  const validators = new Map<string, ValidateFunction>();
  for (const file of files)
    for (const crd of parseObjects(readFileSync(file, 'utf8')) as Crd[])
      for (const version of crd.spec.versions)
        validators.set(
          `${crd.spec.group}/${version.name}/${crd.spec.names.kind}`,
          ajv.compile(closed(version.schema.openAPIV3Schema) as Schema),
        );
  return validators;
}

/** The CRD files of a folder. */
export function crdFiles(dir: URL): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => new URL(f, dir).pathname);
}

/**
 * What is wrong with an object, as `kind/name: problem` lines (none: valid). A kind neither built
 * in (above) nor defined by a loaded CRD is itself a problem.
 */
export function objectProblems(object: KubeObject, crds: Map<string, ValidateFunction>): string[] {
  const where = `${object.kind}/${object.metadata?.name}`;
  const model = MODELS[`${object.apiVersion}/${object.kind}`];
  const crd = crds.get(`${object.apiVersion}/${object.kind}`);
  let problems: string[];
  if (model) problems = builtinProblems(object, model);
  else if (crd) {
    crd(object);
    problems = (crd.errors ?? []).map(
      (e) => `${e.instancePath || '.'} ${e.message ?? ''} ${JSON.stringify(e.params)}`,
    );
  } else problems = [`no schema for ${object.apiVersion} ${object.kind}`];
  return problems.map((p) => `${where}: ${p}`);
}

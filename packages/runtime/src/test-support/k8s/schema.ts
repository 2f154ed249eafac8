// A custom resource checked against its CRD's structural openAPIV3Schema, as kube-apiserver does:
// types, required fields, enums, string and number bounds, and unknown fields pruned (unless the
// schema says x-kubernetes-preserve-unknown-fields).
import { isRecord } from './objects.js';

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  nullable?: boolean;
  maxLength?: number;
  minLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  maxItems?: number;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
}

function typeError(schema: Schema, value: unknown): string | undefined {
  if (schema['x-kubernetes-int-or-string'])
    return typeof value === 'string' || Number.isInteger(value)
      ? undefined
      : 'must be an integer or a string';
  const ok: Record<string, (v: unknown) => boolean> = {
    object: isRecord,
    array: Array.isArray,
    string: (v) => typeof v === 'string',
    integer: Number.isInteger,
    number: (v) => typeof v === 'number',
    boolean: (v) => typeof v === 'boolean',
  };
  const check = schema.type ? ok[schema.type] : undefined;
  return check && !check(value) ? `must be of type ${schema.type as string}` : undefined;
}

function boundsError(schema: Schema, value: unknown): string | undefined {
  if (schema.enum && !schema.enum.includes(value))
    return `Unsupported value: ${JSON.stringify(value)}: supported values: ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`;
  if (typeof value === 'string') {
    if (schema.maxLength !== undefined && value.length > schema.maxLength)
      return `may not be more than ${schema.maxLength} bytes`;
    if (schema.minLength !== undefined && value.length < schema.minLength)
      return `should be at least ${schema.minLength} chars long`;
    if (schema.pattern && !new RegExp(schema.pattern).test(value)) return `should match '${schema.pattern}'`;
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum)
      return `should be greater than or equal to ${schema.minimum}`;
    if (schema.maximum !== undefined && value > schema.maximum)
      return `should be less than or equal to ${schema.maximum}`;
  }
  if (Array.isArray(value) && schema.maxItems !== undefined && value.length > schema.maxItems)
    return `must have at most ${schema.maxItems} items`;
  return undefined;
}

function checkObject(schema: Schema, value: Record<string, unknown>, path: string, errors: string[]): void {
  for (const name of schema.required ?? [])
    if (value[name] === undefined) errors.push(`${path}.${name}: Required value`);
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] || schema['x-kubernetes-embedded-resource'];
  for (const [key, child] of Object.entries(value)) {
    const childSchema =
      schema.properties?.[key] ??
      (isRecord(schema.additionalProperties) ? schema.additionalProperties : undefined);
    if (childSchema) check(childSchema, child, `${path}.${key}`, errors);
    else if (
      !preserve &&
      schema.additionalProperties !== true &&
      (schema.properties || schema.additionalProperties === false)
    )
      delete value[key]; // pruned, as kube-apiserver drops unknown fields
  }
}

function check(schema: Schema, value: unknown, path: string, errors: string[]): void {
  if (value === null && schema.nullable) return;
  const problem = typeError(schema, value) ?? boundsError(schema, value);
  if (problem) {
    errors.push(`${path}: Invalid value: ${problem}`);
    return;
  }
  if (isRecord(value)) checkObject(schema, value, path, errors);
  if (Array.isArray(value) && schema.items)
    value.forEach((item, i) => check(schema.items as Schema, item, `${path}[${i}]`, errors));
}

/**
 * Checks `object` (pruning it in place) against a CRD version's schema; apiVersion, kind and
 * metadata are the server's, not the schema's. Returns the errors, empty when valid.
 */
export function validateAgainstSchema(schema: unknown, object: Record<string, unknown>): string[] {
  if (!isRecord(schema)) return [];
  const { apiVersion, kind, metadata, ...rest } = object;
  const body: Record<string, unknown> = { ...rest };
  const errors: string[] = [];
  check(
    {
      ...(schema as Schema),
      required: ((schema as Schema).required ?? []).filter(
        (r) => !['apiVersion', 'kind', 'metadata'].includes(r),
      ),
    },
    body,
    '',
    errors,
  );
  for (const key of Object.keys(object))
    if (!['apiVersion', 'kind', 'metadata'].includes(key) && !(key in body)) delete object[key];
  Object.assign(object, { apiVersion, kind, metadata }, body);
  return errors.map((e) => e.replace(/^\./, ''));
}

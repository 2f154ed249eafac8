/**
 * A form from an MCP tool's input schema (JSON Schema): one field per property, and the arguments
 * the filled form makes, each value converted to its property's type. A value that does not fit
 * is an error naming the field.
 */

export type FieldKind = 'string' | 'number' | 'integer' | 'boolean' | 'enum' | 'json';

export interface FormField {
  name: string;
  kind: FieldKind;
  required: boolean;
  description?: string;
  options?: string[];
  minimum?: number;
  maximum?: number;
}

interface PropertySchema {
  type?: string | string[];
  enum?: unknown[];
  description?: string;
  minimum?: number;
  maximum?: number;
}

function kindOf(p: PropertySchema): FieldKind {
  if (Array.isArray(p.enum) && p.enum.every((v) => typeof v === 'string')) return 'enum';
  const type = Array.isArray(p.type) ? p.type.find((t) => t !== 'null') : p.type;
  if (type === 'string' || type === 'number' || type === 'integer' || type === 'boolean') return type;
  return 'json'; // objects, arrays, unions: typed as JSON
}

/** The form's fields, in the schema's property order. */
export function formFields(schema: unknown): FormField[] {
  const s = (schema ?? {}) as { properties?: Record<string, PropertySchema>; required?: string[] };
  const required = new Set(Array.isArray(s.required) ? s.required : []);
  return Object.entries(s.properties ?? {}).map(([name, p]) => {
    const field: FormField = { name, kind: kindOf(p), required: required.has(name) };
    if (p.description) field.description = p.description;
    if (field.kind === 'enum') field.options = p.enum as string[];
    if (typeof p.minimum === 'number') field.minimum = p.minimum;
    if (typeof p.maximum === 'number') field.maximum = p.maximum;
    return field;
  });
}

/** A form value that does not fit its field. */
export class FormValueError extends Error {
  override name = 'FormValueError';
}

function convert(field: FormField, raw: string | boolean): unknown {
  if (field.kind === 'boolean') return raw === true;
  const text = String(raw).trim();
  if (field.kind === 'string' || field.kind === 'enum') return String(raw);
  if (field.kind === 'json') {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new FormValueError(`${field.name} must be JSON: ${(error as Error).message}`);
    }
  }
  const n = Number(text);
  if (!Number.isFinite(n) || (field.kind === 'integer' && !Number.isInteger(n)))
    throw new FormValueError(
      `${field.name} must be ${field.kind === 'integer' ? 'a whole number' : 'a number'}`,
    );
  if (field.minimum !== undefined && n < field.minimum)
    throw new FormValueError(`${field.name} must be at least ${field.minimum}`);
  if (field.maximum !== undefined && n > field.maximum)
    throw new FormValueError(`${field.name} must be at most ${field.maximum}`);
  return n;
}

/** The tool call's arguments from the form's values; empty optional fields are left out. */
export function formArguments(
  fields: readonly FormField[],
  values: Readonly<Record<string, string | boolean>>,
): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const field of fields) {
    const raw = values[field.name];
    const empty = raw === undefined || (typeof raw === 'string' && raw.trim() === '');
    if (empty && field.kind !== 'boolean') {
      if (field.required) throw new FormValueError(`${field.name} is required`);
      continue;
    }
    args[field.name] = convert(field, raw ?? false);
  }
  return args;
}

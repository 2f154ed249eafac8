import type { AttributeValue, SpanRecord } from '../wire-types.js';

/**
 * Hot GenAI attributes copied into columns of their own at ingest, so `stats … by model` and token
 * sums run as SQL aggregates instead of parsing every record. A column holds the attribute's value
 * when it is a string (text columns) or a number (number columns); a span whose value has another
 * type (or sits in a nested kvlist) gets `hot_odd = 1`, and while any such span exists the query
 * engine reads these fields from the records instead.
 */
export const HOT_ATTRIBUTES = [
  { key: 'gen_ai.request.model', column: 'ga_model', kind: 'text' },
  { key: 'gen_ai.operation.name', column: 'ga_operation', kind: 'text' },
  { key: 'gen_ai.provider.name', column: 'ga_provider', kind: 'text' },
  { key: 'gen_ai.usage.input_tokens', column: 'ga_input_tokens', kind: 'number' },
  { key: 'gen_ai.usage.output_tokens', column: 'ga_output_tokens', kind: 'number' },
] as const;

type Value = AttributeValue | SpanRecord | undefined;

/**
 * Looks up a dotted key in a flat attribute map: the whole key first (`session.id` is one key), then
 * the longest existing prefix that holds an object (kvlist values), and so on down.
 */
export function lookupKey(obj: unknown, key: string): Value {
  if (typeof obj !== 'object' || obj === null) return undefined;
  if (Object.hasOwn(obj, key)) return (obj as Record<string, AttributeValue>)[key];
  for (let i = key.lastIndexOf('.'); i > 0; i = key.lastIndexOf('.', i - 1)) {
    const prefix = key.slice(0, i);
    if (Object.hasOwn(obj, prefix)) {
      const v = (obj as Record<string, AttributeValue>)[prefix];
      if (typeof v === 'object' && v !== null) {
        const found = lookupKey(v, key.slice(i + 1));
        if (found !== undefined) return found;
      }
    }
  }
  return undefined;
}

/**
 * The value of a query field on a span record. `attributes.` and `resource.attributes.` take the
 * rest as one flat key (as Transaction Search does); `@timestamp` is the start in epoch ms;
 * `@message` is the whole record.
 */
export function resolveField(rec: SpanRecord, path: string): Value {
  if (path === '@timestamp') return rec.startTimeUnixNano / 1e6;
  if (path === '@message') return rec;
  if (path.startsWith('attributes.')) return lookupKey(rec.attributes, path.slice(11));
  if (path.startsWith('resource.attributes.')) return lookupKey(rec.resource.attributes, path.slice(20));
  return lookupKey(rec, path);
}

import type { TextMapGetter } from '@opentelemetry/api';

/** Headers as Node gives them (`IncomingMessage.headers`) or any plain record of strings. */
export type HeaderCarrier = Readonly<Record<string, string | string[] | undefined>>;

/**
 * Reads the first value of the first header in `names` that is present in `carrier`, through a
 * `TextMapGetter`. Names are compared without case, as HTTP requires, because carriers built by
 * hand (tests, fetch `Headers` copied into a record) do not always use lowercase keys.
 */
export function firstHeader<Carrier>(
  carrier: Carrier,
  names: readonly string[],
  getter: TextMapGetter<Carrier>,
): { name: string; value: string } | undefined {
  for (const name of names) {
    const value = headerValue(carrier, name, getter);
    if (value !== undefined) return { name, value };
  }
  return undefined;
}

/** One header's first value (trimmed), or undefined when it is absent or empty. */
export function headerValue<Carrier>(
  carrier: Carrier,
  name: string,
  getter: TextMapGetter<Carrier>,
): string | undefined {
  let raw = getter.get(carrier, name);
  if (raw === undefined) {
    // Fall back to a case-insensitive key scan only when the exact lowercase key is missing.
    const key = safeKeys(carrier, getter).find((k) => k.toLowerCase() === name);
    if (key !== undefined) raw = getter.get(carrier, key);
  }
  const first = Array.isArray(raw) ? raw[0] : raw;
  if (typeof first !== 'string') return undefined;
  const trimmed = first.trim();
  return trimmed === '' ? undefined : trimmed;
}

function safeKeys<Carrier>(carrier: Carrier, getter: TextMapGetter<Carrier>): string[] {
  try {
    return carrier === null || carrier === undefined ? [] : getter.keys(carrier);
  } catch {
    // A hostile or odd carrier must not break extraction: treat it as having no headers.
    return [];
  }
}

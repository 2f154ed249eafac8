import type { TextMapGetter } from '@opentelemetry/api';

/** Headers as Node gives them (`IncomingMessage.headers`) or any plain record of strings. */
export type HeaderCarrier = Readonly<Record<string, string | string[] | undefined>>;

/**
 * Reads the first value of the first header in `names` that is present in `carrier`, through a
 * `TextMapGetter` (lowercase keys, see {@link headerValue}).
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

/**
 * One header's first value (trimmed), or undefined when it is absent or empty. Keys are looked up
 * lowercase, as Node's `IncomingMessage.headers` and the W3C propagators have them; a carrier built
 * by hand must use lowercase keys too.
 */
export function headerValue<Carrier>(
  carrier: Carrier,
  name: string,
  getter: TextMapGetter<Carrier>,
): string | undefined {
  const raw = getter.get(carrier, name);
  const first = Array.isArray(raw) ? raw[0] : raw;
  if (typeof first !== 'string') return undefined;
  const trimmed = first.trim();
  return trimmed === '' ? undefined : trimmed;
}

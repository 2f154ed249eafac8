import { type TextMapGetter, defaultTextMapGetter } from '@opentelemetry/api';
import { firstHeader } from './carrier.js';
import { SESSION_ID_HEADERS } from './headers.js';

/** Longest session id accepted from a header (the AWS API allows up to 256 characters). */
export const MAX_SESSION_ID_LENGTH = 256;

// Letters, digits and the punctuation real session ids use (UUIDs, ULIDs, `user:123`, `a.b_c`).
// Anything else (spaces, quotes, commas, control characters) is refused, because the value ends up
// in baggage, span attributes and log lines.
const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@=+/-]*$/;

/**
 * What is wrong with a session id, or undefined when it is usable: non-empty, at most 256
 * characters, safe characters. The one place these rules live: the runtime adds only AWS's minimum
 * length (33), so every id the runtime accepts is one its workers' propagation accepts too.
 */
export function sessionIdProblem(value: string): string | undefined {
  if (value.length === 0) return 'must not be empty';
  if (value.length > MAX_SESSION_ID_LENGTH) return `length ${value.length} is over ${MAX_SESSION_ID_LENGTH}`;
  if (!SESSION_ID_PATTERN.test(value))
    return 'must start with a letter or digit and hold only letters, digits and . _ : @ = + / -';
  return undefined;
}

/** True when `value` is a usable session id: non-empty, at most 256 characters, safe characters. */
export function isValidSessionId(value: unknown): value is string {
  return typeof value === 'string' && sessionIdProblem(value) === undefined;
}

/**
 * The session id sent in `X-Cloud-Agent-Runtime-Session-Id` or, failing that, the AWS name
 * `X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`. An invalid value under one name does not hide a
 * valid one under the other. Returns undefined when neither carries a valid id; never throws.
 */
export function readSessionId<Carrier>(
  carrier: Carrier,
  getter: TextMapGetter<Carrier> = defaultTextMapGetter as TextMapGetter<Carrier>,
): string | undefined {
  for (const name of SESSION_ID_HEADERS) {
    const found = firstHeader(carrier, [name], getter);
    if (found && isValidSessionId(found.value)) return found.value;
  }
  return undefined;
}

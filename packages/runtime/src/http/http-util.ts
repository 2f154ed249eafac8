import { type IncomingMessage } from 'node:http';
import { HttpError, readBody as readLimitedBody } from '@agentrt/kit';
import { RuntimeApiError, validationError } from '../errors.js';

/** The runtime's words for a body over the limit: its declared size when it said one. */
function tooLarge(req: IncomingMessage, maxBytes: number): RuntimeApiError {
  const declared = Number(req.headers['content-length']);
  return validationError(
    'body',
    declared > maxBytes
      ? `is ${declared} bytes; the limit is ${maxBytes}`
      : `exceeds the limit of ${maxBytes} bytes`,
  );
}

/** Reads the whole request body, refusing more than `maxBytes` with a ValidationException. */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  try {
    return await readLimitedBody(req, maxBytes);
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    // The runtime answers in the AWS error shape: an unreadable body is the `body` field's fault.
    throw error.status === 413 ? tooLarge(req, maxBytes) : validationError('body', error.message);
  }
}

/** Parses a JSON object body; an empty body is `{}`. */
export async function readJsonObject(
  req: IncomingMessage,
  maxBytes: number,
): Promise<Record<string, unknown>> {
  const raw = await readBody(req, maxBytes);
  if (raw.length === 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch (error) {
    throw new RuntimeApiError(
      'ValidationException',
      `body: not valid JSON (${(error as Error).message})`,
      { reason: 'CannotParse', fieldList: [{ name: 'body', message: 'not valid JSON' }] },
      { cause: error },
    );
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new RuntimeApiError('ValidationException', 'body: must be a JSON object', {
      reason: 'CannotParse',
      fieldList: [{ name: 'body', message: 'must be a JSON object' }],
    });
  }
  return parsed as Record<string, unknown>;
}

/** The first value of a header, trimmed; blank counts as absent. */
export function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name.toLowerCase()];
  const first = Array.isArray(value) ? value[0] : value;
  const trimmed = first?.trim();
  return trimmed ? trimmed : undefined;
}

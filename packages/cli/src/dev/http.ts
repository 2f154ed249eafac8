/** Small fetch helpers shared by `agentrt dev` and `agentrt doctor`. */

/** True when `url` answers with a 2xx within `timeoutMs`. Never throws. */
export async function answersOk(url: string, init: RequestInit = {}, timeoutMs = 2_000): Promise<boolean> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

/** True when something speaks HTTP at `url` (any status). Never throws. */
export async function answersHttp(url: string, timeoutMs = 2_000): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

/** An HTTP call that failed: the status and the body, for messages that say what went wrong. */
export class HttpCallError extends Error {
  override name = 'HttpCallError';
  constructor(
    message: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(message);
  }
}

/** Sends a JSON request and parses the JSON answer; a non-2xx status throws HttpCallError with the body. */
export async function callJson<T>(
  method: string,
  url: string,
  body?: unknown,
  timeoutMs = 10_000,
): Promise<T> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok)
    throw new HttpCallError(
      `${method} ${url} answered ${res.status}: ${text.slice(0, 500)}`,
      res.status,
      text,
    );
  return (text ? JSON.parse(text) : {}) as T;
}

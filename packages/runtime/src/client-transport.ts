// The HTTP under the runtime client (client.ts): the runtime's URL and API key, JSON calls, the
// runtime's AWS-shaped error answers, and List* pagination.

/** An AWS-shaped error answer from the runtime (`x-amzn-errortype` + `{"message"}`). */
export class RuntimeClientRequestError extends Error {
  override name = 'RuntimeClientRequestError';
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(`${type} (${status}): ${message}`);
  }
}

/** What every call of a client shares: the runtime's URL, the API key, JSON calls and their errors. */
export interface Transport {
  base: string;
  headers(extra?: Record<string, string>): Record<string, string>;
  call<T>(method: string, path: string, body?: unknown): Promise<T>;
  /** Every item of a paginated List* operation (POST with `?nextToken=`). */
  allPages<K extends string, T>(path: string, key: K): Promise<T[]>;
}

export function createTransport(options: { url: string; apiKey?: string }): Transport {
  const base = options.url.replace(/\/+$/, '');
  const headers = (extra: Record<string, string> = {}): Record<string, string> => ({
    ...(options.apiKey ? { 'x-api-key': options.apiKey } : {}),
    ...extra,
  });
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: headers(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!res.ok) return fail(res);
    return (res.status === 204 ? {} : await res.json()) as T;
  };
  return { base, headers, call, allPages: (path, key) => allPages(call, path, key) };
}

/** Throws the runtime's error answer as a RuntimeClientRequestError (its `message`, else the text). */
export async function fail(res: Response): Promise<never> {
  const text = await res.text();
  let message = text;
  try {
    message = (JSON.parse(text) as { message?: string }).message ?? text;
  } catch {
    // not JSON: keep the raw text
  }
  throw new RuntimeClientRequestError(res.status, res.headers.get('x-amzn-errortype') ?? 'Error', message);
}

async function allPages<K extends string, T>(call: Transport['call'], path: string, key: K): Promise<T[]> {
  const all: T[] = [];
  let token: string | undefined;
  do {
    const page = await call<Record<K, T[]> & { nextToken?: string }>(
      'POST',
      `${path}${token ? `?nextToken=${encodeURIComponent(token)}` : ''}`,
    );
    all.push(...page[key]);
    token = page.nextToken;
  } while (token);
  return all;
}

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

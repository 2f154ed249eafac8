/**
 * The credentials the Inspector sends to a runtime host's data plane (a bearer token for JWT
 * runtimes, an API key for a host started with AGENTRT_API_KEYS), kept per host so that a token is
 * only ever sent to the host it was typed for. Where they are kept: this tab's sessionStorage
 * (gone when the tab closes) unless the user ticks "remember on this device", which keeps them in
 * localStorage — in clear, as any page of this origin can read it; the box says so.
 */
import type { RuntimeAuth } from './inspector-client.js';

export interface StoredAuth extends RuntimeAuth {
  /** Kept in localStorage (across tabs and restarts) rather than this tab's sessionStorage. */
  remember: boolean;
}

type Stores = {
  session: Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>;
  local: Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>;
};

export const authKey = (host: string): string => `agentrt.inspector.auth ${host}`;

function read(storage: Stores['session'], key: string): RuntimeAuth | undefined {
  try {
    const v = JSON.parse(storage.getItem(key) ?? 'null') as RuntimeAuth | null;
    if (!v || typeof v !== 'object') return undefined;
    const auth: RuntimeAuth = {};
    if (typeof v.bearer === 'string' && v.bearer) auth.bearer = v.bearer;
    if (typeof v.apiKey === 'string' && v.apiKey) auth.apiKey = v.apiKey;
    return auth;
  } catch {
    return undefined; // Unreadable (hand-edited, another version): as if none.
  }
}

/** The host's credentials: this tab's, else the remembered ones. */
export function loadAuth(stores: Stores, host: string): StoredAuth {
  const key = authKey(host);
  const inTab = read(stores.session, key);
  if (inTab) return { ...inTab, remember: false };
  const remembered = read(stores.local, key);
  return remembered ? { ...remembered, remember: true } : { remember: false };
}

/** Keeps the host's credentials where `remember` says, and removes them from the other place. */
export function saveAuth(stores: Stores, host: string, auth: StoredAuth): void {
  const key = authKey(host);
  const value: RuntimeAuth = {};
  if (auth.bearer?.trim()) value.bearer = auth.bearer.trim();
  if (auth.apiKey?.trim()) value.apiKey = auth.apiKey.trim();
  const [keep, drop] = auth.remember ? [stores.local, stores.session] : [stores.session, stores.local];
  try {
    drop.removeItem(key);
    if (value.bearer || value.apiKey) keep.setItem(key, JSON.stringify(value));
    else keep.removeItem(key);
  } catch {
    // Storage disabled: the credentials last for this page only (the view holds them).
  }
}

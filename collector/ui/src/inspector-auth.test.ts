import { describe, expect, it } from 'vitest';
import { authKey, loadAuth, saveAuth } from './inspector-auth.js';

function memoryStorage() {
  const items = new Map<string, string>();
  return {
    items,
    getItem: (k: string) => items.get(k) ?? null,
    setItem: (k: string, v: string) => void items.set(k, v),
    removeItem: (k: string) => void items.delete(k),
  };
}

describe('the Inspector credentials', () => {
  it('keeps them in this tab only, unless remembered, and per host', () => {
    const stores = { session: memoryStorage(), local: memoryStorage() };
    const host = 'http://127.0.0.1:8787';
    saveAuth(stores, host, { bearer: ' tok ', apiKey: '', remember: false });
    expect(stores.local.items.size).toBe(0);
    expect(JSON.parse(stores.session.items.get(authKey(host))!)).toEqual({ bearer: 'tok' });
    expect(loadAuth(stores, host)).toEqual({ bearer: 'tok', remember: false });
    expect(loadAuth(stores, 'http://other:8787')).toEqual({ remember: false });

    saveAuth(stores, host, { apiKey: 'k1', remember: true });
    expect(stores.session.items.size).toBe(0);
    expect(loadAuth(stores, host)).toEqual({ apiKey: 'k1', remember: true });

    saveAuth(stores, host, { remember: true });
    expect(stores.local.items.size).toBe(0);
  });

  it('reads hand-edited or hostile values as none', () => {
    const stores = { session: memoryStorage(), local: memoryStorage() };
    for (const bad of ['{', '42', '{"bearer":{"x":1},"apiKey":["a"]}', '{"__proto__":{"bearer":"x"}}']) {
      stores.session.items.set(authKey('h'), bad);
      expect(loadAuth(stores, 'h')).toEqual({ remember: false });
    }
  });
});

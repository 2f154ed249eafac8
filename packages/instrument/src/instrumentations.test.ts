import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isInstalled, selectInstrumentations } from './instrumentations.js';

// An app directory outside the repository, so the monorepo's hoisted node_modules do not count.
const appDir = mkdtempSync(join(tmpdir(), 'agentrt-instr-'));
mkdirSync(join(appDir, 'node_modules', 'koa'), { recursive: true });
writeFileSync(join(appDir, 'node_modules', 'koa', 'package.json'), '{"name":"koa","version":"3.0.0"}');
afterAll(() => rmSync(appDir, { recursive: true, force: true }));

const base = {
  enabled: undefined,
  disabled: [],
  captureMessageContent: false,
  middlewareSpans: false,
  appDir,
};

describe('selectInstrumentations', () => {
  it('loads the built-ins and only the libraries the app has', () => {
    expect(isInstalled('koa', appDir)).toBe(true);
    expect(isInstalled('definitely-not-installed-pkg', appDir)).toBe(false);
    const names = selectInstrumentations(base);
    expect(names).toContain('http');
    expect(names).toContain('undici');
    expect(names).toContain('koa');
    expect(names).not.toContain('definitely-not-installed-pkg');
  });

  it('honours the disabled list and an explicit enabled list', () => {
    expect(selectInstrumentations({ ...base, disabled: ['koa', 'undici'] })).not.toContain('koa');
    expect(selectInstrumentations({ ...base, enabled: ['http', 'mongodb'], disabled: ['mongodb'] })).toEqual([
      'http',
    ]);
  });
});

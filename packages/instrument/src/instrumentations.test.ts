import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Instrumentation } from '@opentelemetry/instrumentation';
import { afterAll, describe, expect, it } from 'vitest';
import { FETCH_CLIENT_SCOPE } from './fetch-client.js';
import { HTTP_CLIENT_SCOPE } from './http-client.js';
import { HTTP_SERVER_SCOPE } from './http-server.js';
import { createInstrumentations, isInstalled, selectInstrumentations } from './instrumentations.js';

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
  httpServerSpans: 'agentrt' as const,
  fetchSpans: 'agentrt' as const,
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

describe('createInstrumentations', () => {
  const names = (list: Instrumentation[]) =>
    list.map((i) => [
      i.instrumentationName,
      (i.getConfig() as { disableIncomingRequestInstrumentation?: boolean })
        .disableIncomingRequestInstrumentation,
    ]);

  it('makes incoming-request spans with its own instrumentation, outgoing ones with the upstream one', () => {
    const made = createInstrumentations({ ...base, enabled: ['http'] });
    for (const i of made) i.disable();
    expect(names(made)).toEqual([
      [HTTP_SERVER_SCOPE, undefined],
      ['@opentelemetry/instrumentation-http', true],
    ]);
  });

  it('lean mode: outgoing requests too are its own (diagnostics channels), upstream not loaded', () => {
    const made = createInstrumentations({ ...base, enabled: ['http'], httpClientSpans: 'agentrt' });
    for (const i of made) i.disable();
    expect(names(made)).toEqual([
      [HTTP_SERVER_SCOPE, undefined],
      [HTTP_CLIENT_SCOPE, undefined],
    ]);
  });

  it('leaves incoming requests to the upstream instrumentation when asked', () => {
    const made = createInstrumentations({ ...base, enabled: ['http'], httpServerSpans: 'upstream' });
    for (const i of made) i.disable();
    expect(names(made)).toEqual([['@opentelemetry/instrumentation-http', false]]);
  });

  it('makes fetch() client spans with its own instrumentation unless asked for the upstream one', () => {
    const ours = createInstrumentations({ ...base, enabled: ['undici'] });
    const upstream = createInstrumentations({ ...base, enabled: ['undici'], fetchSpans: 'upstream' });
    for (const i of [...ours, ...upstream]) i.disable();
    expect(ours.map((i) => i.instrumentationName)).toEqual([FETCH_CLIENT_SCOPE]);
    expect(upstream.map((i) => i.instrumentationName)).toEqual(['@opentelemetry/instrumentation-undici']);
  });
});

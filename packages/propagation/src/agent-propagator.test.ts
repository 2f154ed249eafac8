import {
  type Context,
  ROOT_CONTEXT,
  TraceFlags,
  defaultTextMapGetter,
  defaultTextMapSetter,
  propagation,
  trace,
} from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { createAgentPropagator } from './agent-propagator.js';
import { CloudXRayPropagator } from './cloud-xray-propagator.js';
import { SessionHeaderPropagator } from './session-header-propagator.js';
import { isValidSessionId, readSessionId } from './session-id.js';
import { isRestrictedHeader } from './restricted-headers.js';

const XRAY_TRACE = '5759e988bd862e3fe1be46a994272793';
const XRAY_HEADER = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';
const W3C_TRACE = '0af7651916cd43dd8448eb211c80319c';
const TRACEPARENT = `00-${W3C_TRACE}-b7ad6b7169203331-01`;
const SESSION = 'a1b2c3d4-e5f6-4711-8899-aabbccddeeff-session';

const extract = (headers: Record<string, string | string[]>, ctx: Context = ROOT_CONTEXT) =>
  createAgentPropagator().extract(ctx, headers, defaultTextMapGetter);
const spanCtx = (ctx: Context) => trace.getSpanContext(ctx);
const sessionOf = (ctx: Context) => propagation.getBaggage(ctx)?.getEntry('session.id')?.value;

describe('CloudXRayPropagator', () => {
  it('extracts Root/Parent/Sampled from X-Cloud-Trace-Id', () => {
    const sc = spanCtx(extract({ 'x-cloud-trace-id': XRAY_HEADER }));
    expect(sc).toMatchObject({
      traceId: XRAY_TRACE,
      spanId: '53995c3f42cd8ad8',
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    });
  });

  it('extracts the AWS name X-Amzn-Trace-Id, with Sampled=0, extra keys and spaces', () => {
    const header =
      ' Sampled=0 ; Root=1-5759e988-bd862e3fe1be46a994272793;Lineage=a:1;Parent=53995c3f42cd8ad8';
    const sc = spanCtx(extract({ 'x-amzn-trace-id': header }));
    expect(sc).toMatchObject({ traceId: XRAY_TRACE, traceFlags: TraceFlags.NONE });
  });

  it('prefers X-Cloud-Trace-Id over X-Amzn-Trace-Id, but falls back when ours is malformed', () => {
    const other = 'Root=1-11111111-222222222222222222222222;Parent=3333333333333333;Sampled=1';
    expect(spanCtx(extract({ 'x-cloud-trace-id': XRAY_HEADER, 'x-amzn-trace-id': other }))?.traceId).toBe(
      XRAY_TRACE,
    );
    expect(spanCtx(extract({ 'x-cloud-trace-id': 'Root=garbage', 'x-amzn-trace-id': other }))?.traceId).toBe(
      '11111111222222222222222222222222',
    );
  });

  it.each([
    ['empty', ''],
    ['garbage', 'not a header at all'],
    ['no Sampled flag', 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8'],
    ['bad version', 'Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1'],
    ['short root', 'Root=1-5759e988-bd862e;Parent=53995c3f42cd8ad8;Sampled=1'],
    ['non-hex root', 'Root=1-5759e988-zzzzzzzzzzzzzzzzzzzzzzzz;Parent=53995c3f42cd8ad8;Sampled=1'],
    ['all-zero root', 'Root=1-00000000-000000000000000000000000;Parent=53995c3f42cd8ad8;Sampled=1'],
    ['bad parent', 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=xyz;Sampled=1'],
    ['bad sampled', 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=7'],
    ['huge', `Root=${'1-'.repeat(50_000)}`],
  ])('ignores a malformed header (%s) without throwing', (_name, value) => {
    expect(spanCtx(extract({ 'x-cloud-trace-id': value }))).toBeUndefined();
    expect(spanCtx(extract({ 'x-amzn-trace-id': value }))).toBeUndefined();
  });

  it('leaves the context alone when no header is present or the carrier is odd', () => {
    expect(extract({})).toBe(ROOT_CONTEXT);
    const p = new CloudXRayPropagator();
    expect(p.extract(ROOT_CONTEXT, null, defaultTextMapGetter)).toBe(ROOT_CONTEXT);
    expect(p.extract(ROOT_CONTEXT, { 'x-amzn-trace-id': 42 }, defaultTextMapGetter)).toBe(ROOT_CONTEXT);
  });

  it('injects the active span into both header names and round-trips', () => {
    const ctx = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: XRAY_TRACE,
      spanId: '53995c3f42cd8ad8',
      traceFlags: TraceFlags.SAMPLED,
    });
    const out: Record<string, string> = {};
    new CloudXRayPropagator().inject(ctx, out, defaultTextMapSetter);
    expect(out).toEqual({ 'x-cloud-trace-id': XRAY_HEADER, 'x-amzn-trace-id': XRAY_HEADER });
    const only: Record<string, string> = {};
    new CloudXRayPropagator({ injectHeaders: ['x-cloud-trace-id'] }).inject(ctx, only, defaultTextMapSetter);
    expect(Object.keys(only)).toEqual(['x-cloud-trace-id']);
    expect(spanCtx(extract(out))?.spanId).toBe('53995c3f42cd8ad8');
  });

  it('injects nothing without a valid span', () => {
    const out: Record<string, string> = {};
    new CloudXRayPropagator().inject(ROOT_CONTEXT, out, defaultTextMapSetter);
    expect(out).toEqual({});
  });
});

describe('createAgentPropagator precedence', () => {
  it('lets traceparent win over an X-Ray header sent alongside it', () => {
    const sc = spanCtx(extract({ 'x-cloud-trace-id': XRAY_HEADER, traceparent: TRACEPARENT }));
    expect(sc?.traceId).toBe(W3C_TRACE);
  });

  it('keeps the X-Ray context when traceparent is malformed', () => {
    const sc = spanCtx(extract({ 'x-amzn-trace-id': XRAY_HEADER, traceparent: '00-nope-01' }));
    expect(sc?.traceId).toBe(XRAY_TRACE);
  });

  it('carries tracestate with traceparent', () => {
    const ctx = extract({ traceparent: TRACEPARENT, tracestate: 'vendor=x' });
    expect(spanCtx(ctx)?.traceState?.get('vendor')).toBe('x');
  });

  it('injects traceparent, both X-Ray names and baggage', () => {
    const ctx = extract({
      traceparent: TRACEPARENT,
      baggage: 'tenant=acme',
      'x-cloud-agent-runtime-session-id': SESSION,
    });
    const out: Record<string, string> = {};
    createAgentPropagator().inject(ctx, out, defaultTextMapSetter);
    expect(out.traceparent).toBe(TRACEPARENT);
    expect(out['x-amzn-trace-id']).toContain(`Root=1-0af76519-16cd43dd8448eb211c80319c`);
    expect(out['x-cloud-trace-id']).toBe(out['x-amzn-trace-id']);
    expect(out.baggage?.split(',').sort()).toEqual([`session.id=${SESSION}`, 'tenant=acme']);
    expect(out['x-cloud-agent-runtime-session-id']).toBeUndefined();
  });
});

describe('session id', () => {
  it.each([
    ['ours', 'x-cloud-agent-runtime-session-id'],
    ['AWS', 'x-amzn-bedrock-agentcore-runtime-session-id'],
  ])('puts the %s session header into baggage session.id', (_n, name) => {
    expect(sessionOf(extract({ [name]: SESSION }))).toBe(SESSION);
  });

  it('prefers our header name over the AWS one', () => {
    const ctx = extract({
      'x-cloud-agent-runtime-session-id': 'ours-session',
      'x-amzn-bedrock-agentcore-runtime-session-id': 'aws-session',
    });
    expect(sessionOf(ctx)).toBe('ours-session');
  });

  it('does not override an explicit baggage session.id, and keeps other entries', () => {
    const ctx = extract({
      baggage: 'session.id=from-baggage,k=v',
      'x-cloud-agent-runtime-session-id': SESSION,
    });
    expect(sessionOf(ctx)).toBe('from-baggage');
    expect(propagation.getBaggage(ctx)?.getEntry('k')?.value).toBe('v');
  });

  it('adds session.id next to other incoming baggage entries', () => {
    const ctx = extract({ baggage: 'k=v', 'x-amzn-bedrock-agentcore-runtime-session-id': SESSION });
    expect(sessionOf(ctx)).toBe(SESSION);
    expect(propagation.getBaggage(ctx)?.getEntry('k')?.value).toBe('v');
  });

  it.each([
    ['empty', ''],
    ['spaces only', '   '],
    ['inner space', 'a b'],
    ['comma (would split baggage)', 'a,b'],
    ['control char', 'abc\u0001'],
    ['too long', 'a'.repeat(257)],
    ['leading dash', '-abc'],
  ])('ignores an invalid session header (%s)', (_n, value) => {
    expect(propagation.getBaggage(extract({ 'x-cloud-agent-runtime-session-id': value }))).toBeUndefined();
    expect(readSessionId({ 'x-amzn-bedrock-agentcore-runtime-session-id': value })).toBeUndefined();
  });

  it('falls back to the AWS name when ours is invalid', () => {
    expect(
      readSessionId({
        'x-cloud-agent-runtime-session-id': 'bad value',
        'x-amzn-bedrock-agentcore-runtime-session-id': SESSION,
      }),
    ).toBe(SESSION);
  });

  it('takes the first value of a repeated header and accepts 256 characters', () => {
    expect(readSessionId({ 'x-cloud-agent-runtime-session-id': ['first', 'second'] })).toBe('first');
    expect(isValidSessionId('a'.repeat(256))).toBe(true);
    expect(readSessionId({})).toBeUndefined();
    expect(readSessionId(undefined)).toBeUndefined();
  });

  it('injects the header only when asked to', () => {
    const ctx = extract({ 'x-cloud-agent-runtime-session-id': SESSION });
    const none: Record<string, string> = {};
    new SessionHeaderPropagator().inject(ctx, none, defaultTextMapSetter);
    expect(none).toEqual({});
    const out: Record<string, string> = {};
    new SessionHeaderPropagator({ injectHeaders: ['x-cloud-agent-runtime-session-id'] }).inject(
      ctx,
      out,
      defaultTextMapSetter,
    );
    expect(out).toEqual({ 'x-cloud-agent-runtime-session-id': SESSION });
  });
});

describe('isRestrictedHeader', () => {
  it('refuses transport, caching and proxy headers by name and by family, and lets caller headers through', () => {
    for (const name of [
      'host',
      'connection',
      'cookie',
      'content-type',
      'content-md5',
      'sec-fetch-mode',
      'proxy-connection',
      'x-forwarded-for',
      ':authority',
      'cf-ray',
    ])
      expect(isRestrictedHeader(name), name).toBe(true);
    for (const name of [
      'x-tenant-id',
      'authorization',
      'x-amzn-bedrock-agentcore-runtime-custom-foo',
      'user-agent-hint',
    ])
      expect(isRestrictedHeader(name), name).toBe(false);
  });
});

/**
 * What the launcher's end-to-end tests share: the fixture apps, the bin, quick export settings, and
 * per test a real OTLP/HTTP receiver and a header-recording downstream server.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { afterEach, beforeEach } from 'vitest';
import type { SpanRecord } from '@agentrt/collector';
import { type AppProcess, killAllApps, startHeaderRecorder } from './app-process.js';
import { type OtlpReceiver, startOtlpReceiver } from './otlp-receiver.js';

export const KOA_APP = 'src/instrument/fixtures/koa-app.cjs';
export const ESM_APP = 'src/instrument/fixtures/esm-app.mjs';
export const HTTP_ESM_APP = 'src/instrument/fixtures/http-app.mjs';
export const REDACT_APP = 'src/instrument/fixtures/redact-app.mjs';
export const BIN = createRequire(import.meta.url)
  .resolve('@agentrt/instrument/package.json')
  .replace(/package\.json$/, 'bin/agentrt-instrument.js');
export const FAST_EXPORT = { OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_BLRP_SCHEDULE_DELAY: '100' };
/** Flush deadline in tests that assert what the flush delivered (the default 2 s is for production). */
export const SHUTDOWN_MS = '10000';

export const hex = (bytes: number) => randomBytes(bytes).toString('hex');
export const traceparent = (traceId: string, parent: string) => `00-${traceId}-${parent}-01`;

export async function get(app: AppProcess, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`http://127.0.0.1:${app.port}${path}`, { headers });
  return { status: res.status, body: (await res.text()) as string };
}

export function serverSpan(receiver: OtlpReceiver, traceId: string): SpanRecord | undefined {
  return receiver.spans.find((s) => s.traceId === traceId && s.kind === 'SERVER');
}

export interface LauncherTestContext {
  receiver: OtlpReceiver;
  downstream: Awaited<ReturnType<typeof startHeaderRecorder>>;
}

/** A fresh receiver and downstream for each test of the calling file; its apps killed after each. */
export function useLauncherTestContext(): LauncherTestContext {
  const ctx = {} as LauncherTestContext;
  beforeEach(async () => {
    ctx.receiver = await startOtlpReceiver();
    ctx.downstream = await startHeaderRecorder();
  });
  afterEach(async () => {
    await killAllApps();
    await ctx.receiver.close();
    await ctx.downstream.close();
  });
  return ctx;
}

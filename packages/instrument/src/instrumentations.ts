import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type Context, diag } from '@opentelemetry/api';
import type { Instrumentation } from '@opentelemetry/instrumentation';
import { FetchClientInstrumentation } from './fetch-client.js';
import { HttpClientInstrumentation } from './http-client.js';
import { HttpServerInstrumentation, pathOf } from './http-server.js';
import type { InstrumentConfig } from './config.js';

const require = createRequire(import.meta.url);

/** Health checks are not traced (quiet `/ping`, as the contract asks). */
export const UNTRACED_PATHS: readonly string[] = ['/ping'];

/** One known instrumentation: its package, and the app modules that make it worth loading. */
interface KnownInstrumentation {
  /** Modules whose presence in the app makes this apply; empty = Node built-in, always applies. */
  targets: readonly string[];
}

/**
 * The default, lean set. Anything else the auto-instrumentations know can be turned on by name
 * with `OTEL_NODE_ENABLED_INSTRUMENTATIONS` (it loads `@opentelemetry/instrumentation-<name>`).
 */
export const DEFAULT_INSTRUMENTATIONS: Readonly<Record<string, KnownInstrumentation>> = {
  http: { targets: [] },
  undici: { targets: [] },
  koa: { targets: ['koa'] },
  express: { targets: ['express'] },
  pino: { targets: ['pino'] },
  winston: { targets: ['winston'] },
  'aws-sdk': { targets: ['@smithy/smithy-client', '@aws-sdk/smithy-client', 'aws-sdk'] },
  openai: { targets: ['openai'] },
};

/** Settings that change how instrumentations are configured. */
export interface InstrumentationSettings {
  enabled: readonly string[] | undefined;
  disabled: readonly string[];
  captureMessageContent: boolean;
  /** Spans for each Koa/Express middleware; off keeps one span per request plus router layers. */
  middlewareSpans: boolean;
  /** Who makes incoming-request SERVER spans. */
  httpServerSpans: InstrumentConfig['httpServerSpans'];
  /** Who makes outgoing http/https CLIENT spans: ours (lean mode, diagnostics channels) or upstream. */
  httpClientSpans?: 'agentrt' | 'upstream';
  /** Who makes fetch()/undici CLIENT spans. */
  fetchSpans: InstrumentConfig['fetchSpans'];
  /** Directory of the app's entry script: presence of target modules is checked from here. */
  appDir: string;
  /** The empty context incoming requests start from (see HttpServerInstrumentationConfig). */
  rootContext?: Context;
}

/**
 * Whether `moduleName` is installed where the app's own `require` would look for it from
 * `fromDir` (not where this package's dependencies are: those are not the app's libraries).
 */
export function isInstalled(moduleName: string, fromDir: string): boolean {
  const paths = createRequire(join(fromDir, 'noop.js')).resolve.paths(moduleName) ?? [];
  for (const dir of paths) {
    if (existsSync(join(dir, moduleName, 'package.json'))) return true;
  }
  return false;
}

/** The short names that apply: explicit list, else the default set narrowed to what is installed. */
export function selectInstrumentations(settings: InstrumentationSettings): string[] {
  const disabled = new Set(settings.disabled);
  if (settings.enabled !== undefined) return settings.enabled.filter((n) => !disabled.has(n));
  return Object.entries(DEFAULT_INSTRUMENTATIONS)
    .filter(([name]) => !disabled.has(name))
    .filter(
      ([, known]) => known.targets.length === 0 || known.targets.some((t) => isInstalled(t, settings.appDir)),
    )
    .map(([name]) => name);
}

function isUntracedPath(url: string | undefined): boolean {
  return url !== undefined && UNTRACED_PATHS.includes(pathOf(url));
}

function configFor(name: string, settings: InstrumentationSettings): Record<string, unknown> {
  switch (name) {
    case 'http':
      return {
        // Incoming requests are @agentrt/instrument's own (http-server.ts) unless asked otherwise.
        disableIncomingRequestInstrumentation: settings.httpServerSpans === 'agentrt',
        ignoreIncomingRequestHook: (req: { url?: string }) => isUntracedPath(req.url),
        ignoreOutgoingRequestHook: (req: { path?: string | null }) => isUntracedPath(req.path ?? undefined),
      };
    case 'undici':
      return { ignoreRequestHook: (req: { path?: string }) => isUntracedPath(req.path) };
    case 'koa':
    case 'express':
      return { ignoreLayersType: settings.middlewareSpans ? [] : ['middleware'] };
    case 'openai':
      return { captureMessageContent: settings.captureMessageContent };
    default:
      return {};
  }
}

type InstrumentationClass = new (config?: Record<string, unknown>) => Instrumentation;

/** Loads and constructs one instrumentation by short name; undefined (with a warning) if unknown. */
export function loadInstrumentation(
  name: string,
  settings: InstrumentationSettings,
): Instrumentation | undefined {
  const pkg = `@opentelemetry/instrumentation-${name}`;
  let exports: Record<string, unknown>;
  try {
    exports = require(pkg) as Record<string, unknown>;
  } catch (error) {
    diag.warn(`instrumentation "${name}" is not available (${pkg} cannot be loaded); skipping it`, error);
    return undefined;
  }
  const ctor = Object.entries(exports).find(
    ([key, value]) => key.endsWith('Instrumentation') && typeof value === 'function',
  )?.[1] as InstrumentationClass | undefined;
  if (ctor === undefined) {
    diag.warn(`${pkg} exports no instrumentation class; skipping it`);
    return undefined;
  }
  return new ctor(configFor(name, settings));
}

/** The instrumentations to register, each loaded only if it applies. Never throws. */
export function createInstrumentations(settings: InstrumentationSettings): Instrumentation[] {
  const out: Instrumentation[] = [];
  for (const name of selectInstrumentations(settings)) {
    try {
      if (name === 'http' && settings.httpServerSpans === 'agentrt') {
        const { rootContext } = settings;
        out.push(new HttpServerInstrumentation({ untracedPaths: UNTRACED_PATHS, rootContext }));
        if (settings.httpClientSpans === 'agentrt') {
          out.push(new HttpClientInstrumentation({ untracedPaths: UNTRACED_PATHS }));
          continue;
        }
      }
      if (name === 'undici' && settings.fetchSpans === 'agentrt') {
        out.push(new FetchClientInstrumentation({ untracedPaths: UNTRACED_PATHS }));
        continue;
      }
      const instrumentation = loadInstrumentation(name, settings);
      if (instrumentation !== undefined) out.push(instrumentation);
    } catch (error) {
      diag.warn(`instrumentation "${name}" failed to start; skipping it`, error);
    }
  }
  return out;
}

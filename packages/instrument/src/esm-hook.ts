/**
 * Installs the import-in-the-middle ESM loader hook, synchronously, for both preload entries
 * (`--require` and `--import`), limited to the modules the enabled instrumentations patch.
 *
 * Where Node can run import-in-the-middle's synchronous, in-thread hooks (`module.registerHooks`:
 * Node >= 22.22.3, >= 24.11.1) those are used: no loader thread, no message round trips. Elsewhere
 * (or with AGENTRT_ESM_LOADER=async) the `module.register` loader thread runs with the include list
 * in its initialization data, so it knows every hooked module before the app's first `import` is
 * resolved (`register` waits for the loader's `initialize`).
 *
 * Never throws: if the hook cannot be installed it writes one line to stderr and ES modules stay
 * unpatched (CommonJS modules are still patched through require-in-the-middle).
 */
import { type ResolveHookSync, builtinModules, createRequire, register, registerHooks } from 'node:module';
import { supportsSyncHooks } from 'import-in-the-middle/supports-sync-hooks.mjs';
import type { Telemetry } from './telemetry.js';

const require = createRequire(import.meta.url);

/** Where the hook is remembered, so a second entry (both flags given) does not add it twice. */
const HOOK_KEY = Symbol.for('agentrt.instrument.esm-hook');

/** The import-in-the-middle include list: builtins under both their bare and `node:` names. */
export function esmIncludeList(moduleNames: readonly string[]): string[] {
  return moduleNames.flatMap((name) => (builtinModules.includes(name) ? [name, `node:${name}`] : [name]));
}

/** Adds the ESM loader hook for `telemetry`'s instrumentations; returns which kind was installed. */
export function installEsmHook(telemetry: Telemetry): 'sync' | 'async' | 'none' {
  const globals = globalThis as Record<symbol, 'sync' | 'async' | undefined>;
  const installed = globals[HOOK_KEY];
  if (installed !== undefined) return installed;
  try {
    const mode = telemetry.config.esmLoader;
    const syncSupported = supportsSyncHooks();
    if (mode === 'sync' && !syncSupported) {
      warn(`Node ${process.version} cannot run synchronous loader hooks; using the loader thread`, false);
    }
    const include = esmIncludeList(telemetry.moduleNames);
    if (mode !== 'async' && syncSupported) {
      // require(esm): the module has no top-level await, so this stays synchronous
      const hooks = require('import-in-the-middle/register-hooks.mjs') as {
        register(options: { include: string[] }): void;
      };
      hooks.register({ include });
      registerHooks({ resolve: builtinsStayBuiltin });
      globals[HOOK_KEY] = 'sync';
    } else {
      register('import-in-the-middle/hook.mjs', import.meta.url, { data: { include } });
      globals[HOOK_KEY] = 'async';
    }
    return globals[HOOK_KEY];
  } catch (error) {
    warn(error instanceof Error ? error.message : String(error), true);
    return 'none';
  }
}

/**
 * Runs before import-in-the-middle's resolve hook (later hooks run first). iitm 3.6 takes every
 * resolution without a parent URL for the entry point and gives it the format `commonjs` unless it
 * has a file extension — but a `require()` from `node -e`/`-p` code has no parent URL either, so
 * `node -e "require('fs')"` then failed reading a file named `module`. A `node:` URL is a builtin
 * whoever asks for it.
 */
const builtinsStayBuiltin: ResolveHookSync = (specifier, context, nextResolve) => {
  const result = nextResolve(specifier, context);
  return result.format === 'commonjs' && result.url.startsWith('node:')
    ? { ...result, format: 'builtin' }
    : result;
};

function warn(message: string, unavailable: boolean): void {
  try {
    process.stderr.write(
      unavailable
        ? `agentrt-instrument: ESM loader hook unavailable, ES modules will not be patched: ${message}\n`
        : `agentrt-instrument: ${message}\n`,
    );
  } catch {
    // stderr unavailable: stay silent rather than crash the host
  }
}

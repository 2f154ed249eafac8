/**
 * The eval'd source of the collector's worker threads: imports `workerData.entry`. Running from
 * src/ (the tests) the entry is TypeScript: Node strips the types, and this hook resolves the `.js`
 * specifiers tsc-style imports use to the `.ts` files next to them.
 */
export const WORKER_BOOTSTRAP = `
const { workerData } = require('node:worker_threads');
if (workerData.entry.endsWith('.ts')) {
  require('node:module').registerHooks({
    resolve(specifier, context, next) {
      try {
        return next(specifier, context);
      } catch (error) {
        if (/^\\.\\.?\\//.test(specifier) && specifier.endsWith('.js')) return next(specifier.slice(0, -3) + '.ts', context);
        throw error;
      }
    },
  });
}
import(workerData.entry);
`;

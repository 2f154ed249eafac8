/** Quotes a path for NODE_OPTIONS, which splits on spaces but honours double quotes. */
function quote(value: string): string {
  return /[\s"\\]/.test(value) ? `"${value.replace(/(["\\])/g, '\\$1')}"` : value;
}

/**
 * NODE_OPTIONS with `--import <preload>` appended, unless the preload is already there (so
 * nested `agentrt-instrument` calls and child processes do not load it twice).
 */
export function buildNodeOptions(existing: string | undefined, preloadPath: string): string {
  const current = existing?.trim() ?? '';
  if (current.includes(preloadPath)) return current;
  const flag = `--import ${quote(preloadPath)}`;
  return current === '' ? flag : `${current} ${flag}`;
}

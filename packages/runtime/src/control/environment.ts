/**
 * Variables that change how the dynamic loader, the C library or a shell loads code or data: glibc
 * ignores them only in set-uid programs, so a program run with privileges would obey them. A
 * runtime's environment reaches only its workers (after privileges are dropped); these are refused
 * anyway, so that no later change can hand them to a privileged helper.
 */
const LOADER_VARIABLES = new Set([
  'GCONV_PATH',
  'GETCONF_DIR',
  'GLIBC_TUNABLES',
  'HOSTALIASES',
  'LOCALDOMAIN',
  'LOCPATH',
  'MALLOC_TRACE',
  'NIS_PATH',
  'NLSPATH',
  'RESOLV_HOST_CONF',
  'RES_OPTIONS',
  'TZDIR',
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'PS4',
  'IFS',
]);

/** NODE_OPTIONS flags that load a file: theirs must stay inside the artifact (relative, no `..`). */
const NODE_LOADING_FLAGS = new Set([
  '-r',
  '--require',
  '--import',
  '--loader',
  '--experimental-loader',
  '--env-file',
  '--env-file-if-exists',
  '--experimental-policy',
  '--snapshot-blob',
  '--openssl-config',
]);

/** Why a preload path would leave the artifact, or undefined when it stays inside. */
function outsideArtifact(path: string): string | undefined {
  if (path.startsWith('/') || /^file:/i.test(path)) return 'an absolute path';
  if (path.split(/[\\/]/).includes('..')) return 'a path with ..';
  return undefined;
}

/** Why NODE_OPTIONS is refused: a flag that loads a file from outside the artifact. */
function nodeOptionsProblem(value: string): string | undefined {
  const words = value.trim().split(/\s+/);
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string;
    const eq = word.indexOf('=');
    const flag = eq > 0 ? word.slice(0, eq) : word;
    if (!NODE_LOADING_FLAGS.has(flag)) continue;
    const path = eq > 0 ? word.slice(eq + 1) : (words[++i] ?? '');
    const why = outsideArtifact(path.replace(/^["']|["']$/g, ''));
    if (why) return `${flag} names ${why}; files a worker loads must be inside its artifact`;
  }
  return undefined;
}

/**
 * Why one of a runtime's `environmentVariables` is refused, or undefined when it is fine: loader
 * and shell start-up variables, NODE_OPTIONS loading files from outside the artifact, and NUL.
 */
export function environmentVariableProblem(name: string, value: string): string | undefined {
  if (name.startsWith('LD_') || LOADER_VARIABLES.has(name))
    return `${name} changes how programs load code and is not accepted`;
  if (value.includes('\0')) return 'value must not contain NUL';
  if (name === 'NODE_OPTIONS') return nodeOptionsProblem(value);
  return undefined;
}

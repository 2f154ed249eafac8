import { spawnSync } from 'node:child_process';
import { type IsolationSetting } from '../config.js';
import { type CgroupLayout, detectCgroups, sweepStaleCgroups } from './cgroups.js';
import {
  ENV_FD,
  HELPER_ENV,
  type HelperName,
  sourceEnv,
  helperPath,
  requireHelper,
  withTenantEnv,
} from './helpers.js';
import { storageQuotaProblem } from './storage-volume.js';
import { SANDBOX_ID, SANDBOX_RUN_DIR, SANDBOX_WORKER_PORT, SCRATCH_HOME } from './sandbox-view.js';

export type IsolationMode = 'bwrap' | 'process-group';

/** How a sandboxed session reaches the outside world. */
export type NetworkMode =
  /** Own network namespace; outbound traffic through slirp4netns with the host's loopback closed. */
  | 'slirp4netns'
  /** Own network namespace with loopback only: just the allowlisted host ports and the telemetry relay. */
  | 'allowlist-only'
  /** The host's network (process-group mode). */
  | 'shared';

export interface Isolation {
  mode: IsolationMode;
  network: NetworkMode;
  /** Why this mode: shown once in the startup log. */
  reason: string;
  /** Protections that are off here, each with why. Logged at start and shown by `agentrt doctor`. */
  off: string[];
  /** setpriv --pdeathsig: workers die with the runtime even when it is SIGKILLed. */
  pdeathsig: boolean;
  /** The host uid/gid sandboxes run as when the runtime is root (else the runtime's own ids). */
  hostIds: { uid: number; gid: number } | undefined;
  /** Where per-session cgroups (memory, CPU, process limits) go; undefined when they are off. */
  cgroups: CgroupLayout | undefined;
  /** Session storage is a loop-mounted volume of a fixed size (root runtime); else a plain folder. */
  storageVolumes?: boolean;
}

/**
 * Every namespace (user, PID, IPC, UTS, network, cgroup), no capabilities, an unprivileged id inside.
 * Exported so `agentrt doctor` probes bwrap with exactly the namespaces the runtime asks for.
 */
export const SANDBOX_ARGS: readonly string[] = [
  '--unshare-all',
  '--uid',
  String(SANDBOX_ID),
  '--gid',
  String(SANDBOX_ID),
  '--cap-drop',
  'ALL',
  '--die-with-parent',
  '--hostname',
  'agentrt-session',
];

/**
 * The namespaces of a root runtime's sandbox: bwrap runs as root (so it can bind any path), and the
 * worker drops to the sandbox's host uid inside it (see dropPrivileges) — no user namespace needed.
 */
const ROOT_SANDBOX_ARGS: readonly string[] = [
  '--unshare-pid',
  '--unshare-ipc',
  '--unshare-uts',
  '--unshare-net',
  '--unshare-cgroup-try',
  '--die-with-parent',
  '--hostname',
  'agentrt-session',
];

/** The minimal probe filesystem: enough to run `true`. */
const PROBE_VIEW = [
  '--ro-bind',
  '/usr',
  '/usr',
  '--symlink',
  'usr/bin',
  '/bin',
  '--symlink',
  'usr/lib',
  '/lib',
  '--symlink',
  'usr/lib64',
  '/lib64',
  '--proc',
  '/proc',
  '--dev',
  '/dev',
];

/** Runs an installed helper (by absolute path, HELPER_ENV only); false when it is absent or fails. */
function works(name: HelperName, args: string[]): boolean {
  const path = helperPath(name);
  if (!path) return false;
  return spawnSync(path, args, { stdio: 'ignore', timeout: 5000, env: HELPER_ENV }).status === 0;
}

/** The setpriv prefix that drops a root runtime to the sandbox's host ids before bwrap runs. */
export function dropPrivileges(ids: { uid: number; gid: number } | undefined, pdeathsig = false): string[] {
  if (!ids) return pdeathsig ? [requireHelper('setpriv'), '--pdeathsig', 'KILL', '--'] : [];
  return [
    requireHelper('setpriv'),
    // In the same setpriv: a later change of credentials would clear the parent-death signal.
    ...(pdeathsig ? ['--pdeathsig', 'KILL'] : []),
    `--reuid=${ids.uid}`,
    `--regid=${ids.gid}`,
    '--clear-groups',
    '--no-new-privs',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--',
  ];
}

export interface DetectIsolationOptions {
  setting: IsolationSetting;
  /** Host uid/gid for sandboxes when the runtime runs as root. */
  sandboxIds: { uid: number; gid: number };
  isRoot?: boolean;
}

/**
 * Decides once, at startup, how workers are isolated, and says which protections are off and why.
 * A root runtime without the sandbox refuses to start unless `AGENTRT_ISOLATION=unsafe-process`.
 */
export function detectIsolation({
  setting,
  sandboxIds,
  isRoot = process.getuid?.() === 0,
}: DetectIsolationOptions): Isolation {
  const pdeathsig = process.platform === 'linux' && works('setpriv', ['--pdeathsig', 'KILL', '--', 'true']);
  const hostIds = isRoot ? sandboxIds : undefined;
  const unsafe = (reason: string): Isolation => ({
    mode: 'process-group',
    network: 'shared',
    reason,
    off: [
      `${reason}: workers run as the runtime's own user${isRoot ? ' (root)' : ''} with its capabilities, see the host's files and share its network`,
    ],
    pdeathsig,
    hostIds: undefined,
    cgroups: undefined,
  });
  if (setting === 'none' || setting === 'unsafe-process') {
    const reason = `isolation turned off (AGENTRT_ISOLATION=${setting})`;
    if (isRoot && setting === 'none')
      throw new Error(
        `${reason} while the runtime runs as root: workers would be root on the host. Set AGENTRT_ISOLATION=unsafe-process to accept that.`,
      );
    return unsafe(reason);
  }
  let missing: string | undefined;
  if (process.platform !== 'linux') missing = `bwrap needs Linux (this is ${process.platform})`;
  else if (!works('bwrap', ['--version'])) missing = `bwrap is not installed (in ${HELPER_ENV.PATH})`;
  else if (!works('socat', ['-V']))
    missing = `socat is not installed (in ${HELPER_ENV.PATH}; it bridges the session network)`;
  else if (
    !works('bwrap', [
      ...(hostIds ? ROOT_SANDBOX_ARGS : SANDBOX_ARGS),
      ...PROBE_VIEW,
      '--',
      ...dropPrivileges(hostIds),
      '/bin/true',
    ])
  )
    missing =
      'bwrap cannot create user namespaces here (kernel.unprivileged_userns_clone / max_user_namespaces)';
  if (missing) {
    if (setting === 'bwrap') throw new Error(`AGENTRT_ISOLATION=bwrap but ${missing}`);
    if (isRoot)
      throw new Error(
        `${missing}: the runtime runs as root and would start sessions as root without a sandbox. Install bubblewrap and socat, or set AGENTRT_ISOLATION=unsafe-process to accept that.`,
      );
    return unsafe(missing);
  }
  const off: string[] = [];
  // slirp4netns joins the session's network namespace from outside, which needs root here.
  let network: NetworkMode = 'allowlist-only';
  if (!isRoot)
    off.push(
      'outbound network: slirp4netns needs a root runtime to join the session network namespace; sessions reach only the allowlisted host ports (AGENTRT_SANDBOX_HOST_PORTS) and the telemetry relay',
    );
  else if (!works('slirp4netns', ['--version']))
    off.push(
      'outbound network: slirp4netns is not installed; sessions reach only the allowlisted host ports (AGENTRT_SANDBOX_HOST_PORTS) and the telemetry relay',
    );
  else if (!works('nft', ['--version']))
    off.push(
      'outbound network: nft (nftables) is not installed, so the private, link-local and host addresses cannot be closed; sessions reach only the allowlisted host ports (AGENTRT_SANDBOX_HOST_PORTS) and the telemetry relay',
    );
  else network = 'slirp4netns';
  const storageProblem = storageQuotaProblem(isRoot);
  if (storageProblem) off.push(`session storage size limit (AGENTRT_SESSION_STORAGE_MB): ${storageProblem}`);
  const cgroups = detectCgroups();
  if (cgroups.layout) sweepStaleCgroups(cgroups.layout);
  else off.push(`per-session memory, CPU and process limits: ${cgroups.reason ?? 'no cgroups'}`);
  return {
    mode: 'bwrap',
    network,
    reason: `bwrap: user, PID, IPC, UTS, mount, cgroup and network namespaces, no capabilities, ${
      hostIds ? `host uid ${hostIds.uid}` : 'the runtime user mapped to uid 1000'
    }, minimal read-only filesystem`,
    off,
    pdeathsig,
    hostIds,
    cgroups: cgroups.layout,
    storageVolumes: storageProblem === undefined,
  };
}

/**
 * The shell that runs as the sandbox's first process: it bridges the worker's port to a Unix socket
 * in the session's run dir (the only way in), and each allowlisted host port from loopback inside
 * the namespace to a Unix socket the runtime serves, then becomes the worker. `$1` is the
 * space-separated port list; the rest is the worker's argv. The worker bridge logs nowhere: until the
 * worker listens, every readiness probe is a refused connect, and its log lines would push the
 * worker's own start-up output out of the tail a failed start reports. The bridges start before the
 * tenant's environment is read (ENV_FD), so nothing of it reaches them.
 */
function bridgeScript(): string {
  const socat = requireHelper('socat');
  return [
    `mkdir -m 0700 ${SCRATCH_HOME}`,
    'ports=$1; shift',
    `${socat} -lf /dev/null UNIX-LISTEN:${SANDBOX_RUN_DIR}/worker.sock,fork,mode=600,unlink-early TCP:127.0.0.1:${SANDBOX_WORKER_PORT} ${ENV_FD}<&- &`,
    'for p in $ports; do',
    `  ${socat} TCP-LISTEN:$p,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${SANDBOX_RUN_DIR}/port-$p.sock ${ENV_FD}<&- &`,
    'done',
    'unset ports p',
    sourceEnv(),
    'exec "$@"',
  ].join('\n');
}

export interface IsolateOptions {
  /** bwrap's filesystem arguments (see sandboxViewArgs). */
  viewArgs: string[];
  /** Host ports reachable from inside at 127.0.0.1:<port> (bridged through the run dir). */
  bridgedPorts: readonly number[];
  /** Pause bwrap before the worker runs until the runtime writes to fd 4 (its network is set up). */
  blockOnFd: boolean;
}

/**
 * Wraps a worker command. Every helper runs by absolute path with HELPER_ENV only; the tenant's
 * environment reaches the worker through a shell that runs after privileges are dropped (it sources
 * ENV_FD). Under bwrap the worker runs in its own PID, IPC, UTS, mount, network and cgroup
 * namespaces as an unprivileged user with no capabilities and `no_new_privs`: as the sandbox's host
 * uid when the runtime is root (setpriv inside the sandbox), else in a user namespace mapped to the
 * runtime's own uid. It sees only `viewArgs`; bwrap reports the sandbox pid on fd 3.
 */
export function isolate(isolation: Isolation, argv: string[], options?: IsolateOptions): string[] {
  const first = dropPrivileges(undefined, isolation.pdeathsig);
  if (isolation.mode !== 'bwrap' || !options) return [...first, ...withTenantEnv(argv, 'agentrt-worker')];
  return [
    ...first,
    requireHelper('bwrap'),
    ...(isolation.hostIds ? ROOT_SANDBOX_ARGS : SANDBOX_ARGS),
    ...options.viewArgs,
    '--info-fd',
    '3',
    ...(options.blockOnFd ? ['--block-fd', '4'] : []),
    '--',
    ...dropPrivileges(isolation.hostIds),
    requireHelper('sh'),
    '-c',
    bridgeScript(),
    'agentrt-sandbox',
    options.bridgedPorts.join(' '),
    ...argv,
  ];
}

/**
 * Runs `argv` inside a live session's sandbox (InvokeAgentRuntimeCommand): the namespaces, root and
 * working directory of its first process, as the same unprivileged user with `no_new_privs`, as in
 * the hosted service where a command runs in the session's microVM. nsenter drops to that user
 * (`--setuid`/`--setgid`, or the same uid in the sandbox's user namespace) before it executes
 * anything, and then only by absolute path: nothing inside the session's filesystem ever runs with
 * the runtime's privileges, whatever the session did to its own view.
 */
export function enterSandbox(isolation: Isolation, sandboxPid: number, argv: string[]): string[] {
  const namespaces = ['--mount', '--uts', '--ipc', '--net', '--pid', '--root', '--wd'];
  const credentials = isolation.hostIds
    ? [`--setuid=${isolation.hostIds.uid}`, `--setgid=${isolation.hostIds.gid}`]
    : // Same uid as the sandbox's owner: join its user namespace keeping our ids (uid 1000 inside).
      ['--user', '--preserve-credentials'];
  return [
    requireHelper('nsenter'),
    `--target=${sandboxPid}`,
    ...credentials,
    ...namespaces,
    '--',
    requireHelper('setpriv'),
    '--no-new-privs',
    '--inh-caps=-all',
    '--',
    ...withTenantEnv(argv, 'agentrt-command'),
  ];
}

// Real ClickHouse (and ZooKeeper) servers for tests: Debian's clickhouse-server started as a child
// process with its own config, ports and data dir under a temp dir, no init system, no Docker.
// A single node starts in ~0.3 s, ZooKeeper in ~1 s; share one per test file.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { freePort } from '@agentrt/kit';

/** Debian's package (`apt-get install clickhouse-server clickhouse-client`); CI installs it (`.ci/run`). */
export const CLICKHOUSE_SERVER_BIN = '/usr/sbin/clickhouse-server';
/** Debian's `zookeeper` package. */
export const ZOOKEEPER_JAR = '/usr/share/java/zookeeper.jar';
export const hasClickHouse = existsSync(CLICKHOUSE_SERVER_BIN);
export const hasZooKeeper = ((): boolean => {
  const found = existsSync(ZOOKEEPER_JAR) && existsSync('/usr/bin/java');
  if (!found && process.env['CI'])
    throw new Error(`${ZOOKEEPER_JAR} is missing in CI: .ci/run must install zookeeper`);
  return found;
})();
/**
 * Why ClickHouse tests skip, or undefined when they run. In CI a missing binary is a failure (the
 * apt list must bring it), not a skip.
 */
export const clickHouseSkipReason = ((): string | undefined => {
  if (hasClickHouse) return undefined;
  if (process.env['CI'])
    throw new Error(`${CLICKHOUSE_SERVER_BIN} is missing in CI: .ci/run must install it`);
  return `${CLICKHOUSE_SERVER_BIN} not installed (apt-get install clickhouse-server clickhouse-client)`;
})();

const START_TIMEOUT_MS = 30_000;

interface Child {
  child: ChildProcess;
  exited: Promise<void>;
}

/** Every server started here, killed when the test process exits however it ends (a timeout too). */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

function spawnChild(command: string, args: string[], logFile: string): Child {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  running.add(child);
  // A test process that is killed (vitest ends its workers with a signal) runs no 'exit' handler:
  // a watchdog kills the server once this process is gone.
  const guard = spawn(
    'sh',
    ['-c', `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; kill -9 ${child.pid}`],
    { stdio: 'ignore' },
  );
  guard.unref();
  child.once('exit', () => {
    running.delete(child);
    guard.kill('SIGKILL');
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      if (stderr) writeFileSync(logFile, stderr, { flag: 'a' });
      resolve();
    }),
  );
  return { child, exited };
}

async function stopChild(c: Child, graceMs = 5000): Promise<void> {
  if (c.child.exitCode !== null || c.child.signalCode !== null) return;
  c.child.kill('SIGTERM');
  // A frozen (SIGSTOP) process takes the SIGTERM only once it runs again.
  c.child.kill('SIGCONT');
  const timer = setTimeout(() => c.child.kill('SIGKILL'), graceMs);
  await c.exited;
  clearTimeout(timer);
}

/** A server that exited before it answered (e.g. a free port another process took meanwhile). */
class StartUpExit extends Error {}

async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  c: Child,
  logFile: string,
): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (c.child.exitCode !== null || c.child.signalCode !== null) {
      // clickhouse-server says why in its error log (stderr only names the log files).
      const errorLog = join(dirname(logFile), 'error.log');
      const log = [logFile, errorLog]
        .map((file) => (existsSync(file) ? readFileSync(file, 'utf8').slice(-2000) : ''))
        .join('\n');
      throw new StartUpExit(`${what} exited during start-up: ${log}`);
    }
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  await stopChild(c);
  throw new Error(`${what} did not answer within ${START_TIMEOUT_MS} ms`);
}

export interface ZooKeeperServer {
  port: number;
  stop(): Promise<void>;
}

/** A standalone ZooKeeper (Debian's jar) on a free port with its own data dir. */
export async function startZooKeeper(dir: string): Promise<ZooKeeperServer> {
  const port = await freePort();
  const data = join(dir, 'zookeeper');
  mkdirSync(data, { recursive: true });
  const logFile = join(data, 'stderr.log');
  const c = spawnChild(
    '/usr/bin/java',
    [
      '-Xmx256m',
      '-Dzookeeper.admin.enableServer=false',
      '-Dzookeeper.4lw.commands.whitelist=srvr',
      '-cp',
      ZOOKEEPER_JAR,
      'org.apache.zookeeper.server.ZooKeeperServerMain',
      String(port),
      data,
    ],
    logFile,
  );
  // `ruok` says imok as soon as the port is open; `srvr` names a Mode only once sessions are served
  // (a client connecting earlier is dropped during its handshake).
  const serving = (): Promise<boolean> =>
    new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.setTimeout(1000, () => socket.destroy());
      let reply = '';
      socket.on('data', (d) => (reply += d.toString()));
      socket.on('connect', () => socket.end('srvr'));
      socket.on('close', () => resolve(reply.includes('Mode:')));
      socket.on('error', () => resolve(false));
    });
  await waitFor('ZooKeeper', serving, c, logFile);
  return { port, stop: () => stopChild(c) };
}

export interface ClickHouseNodeOptions {
  /** Data, config and logs go here. */
  dir: string;
  name: string;
  /** `<remote_servers>` cluster: name and each shard's replicas as TCP ports on 127.0.0.1. */
  cluster?: { name: string; shards: number[][] };
  zooKeeperPort?: number;
  macros?: Record<string, string>;
  ports?: { http: number; tcp: number; interserver: number };
}

export interface ClickHouseNode {
  name: string;
  url: string;
  httpPort: number;
  tcpPort: number;
  dir: string;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s). Data stays for start(). */
  stop(): Promise<void>;
  /** Kills it at once (SIGKILL), as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same ports and data (after stop/kill). */
  start(): Promise<void>;
  /** Whether its process is running. */
  running(): boolean;
  /** The server's process id while it runs (CPU accounting in benchmarks). */
  pid(): number | undefined;
  /** Freezes the process (SIGSTOP): it keeps its sockets but answers nothing, as a hung server. */
  freeze(): void;
  /** Lets a frozen process run again (SIGCONT). */
  thaw(): void;
  /** Stops it for good and removes nothing (the owning harness removes its temp dir). */
}

const xml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function configXml(
  o: ClickHouseNodeOptions,
  ports: { http: number; tcp: number; interserver: number },
): string {
  const data = join(o.dir, o.name);
  const cluster = o.cluster
    ? `<remote_servers><${o.cluster.name}>${o.cluster.shards
        .map(
          (replicas) =>
            `<shard><internal_replication>true</internal_replication>${replicas
              .map((p) => `<replica><host>127.0.0.1</host><port>${p}</port></replica>`)
              .join('')}</shard>`,
        )
        .join('')}</${o.cluster.name}></remote_servers>`
    : '';
  const zk = o.zooKeeperPort
    ? `<zookeeper><node><host>127.0.0.1</host><port>${o.zooKeeperPort}</port></node></zookeeper>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>`
    : '';
  const macros = o.macros
    ? `<macros>${Object.entries(o.macros)
        .map(([k, v]) => `<${k}>${xml(v)}</${k}>`)
        .join('')}</macros>`
    : '';
  return `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>${data}/server.log</log><errorlog>${data}/error.log</errorlog><console>0</console></logger>
  <http_port>${ports.http}</http_port>
  <tcp_port>${ports.tcp}</tcp_port>
  <interserver_http_port>${ports.interserver}</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <listen_host>127.0.0.1</listen_host>
  <path>${data}/data/</path>
  <tmp_path>${data}/tmp/</tmp_path>
  <user_files_path>${data}/user_files/</user_files_path>
  <format_schema_path>${data}/format_schemas/</format_schema_path>
  <mark_cache_size>134217728</mark_cache_size>
  <uncompressed_cache_size>134217728</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  <keep_alive_timeout>60</keep_alive_timeout>
  <timezone>UTC</timezone>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default>
    <agentrt><password>s3cret</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></agentrt>
  </users>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <quotas><default/></quotas>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  ${cluster}
  ${zk}
  ${macros}
</yandex>
`;
}

/**
 * One clickhouse-server process; ports are chosen free unless given. Chosen ones may be taken by
 * another process before the server binds them (test files start servers side by side): a server
 * that exits during start-up on chosen ports is tried once more on new ones.
 */
export async function startClickHouseNode(o: ClickHouseNodeOptions): Promise<ClickHouseNode> {
  if (o.ports) return startNodeOn(o, o.ports);
  const choose = async () => ({
    http: await freePort(),
    tcp: await freePort(),
    interserver: await freePort(),
  });
  try {
    return await startNodeOn(o, await choose());
  } catch (error) {
    if (!(error instanceof StartUpExit)) throw error;
    return startNodeOn(o, await choose());
  }
}

async function startNodeOn(
  o: ClickHouseNodeOptions,
  ports: NonNullable<ClickHouseNodeOptions['ports']>,
): Promise<ClickHouseNode> {
  const data = join(o.dir, o.name);
  mkdirSync(data, { recursive: true });
  const configFile = join(data, 'config.xml');
  writeFileSync(configFile, configXml(o, ports));
  const logFile = join(data, 'stderr.log');
  const url = `http://127.0.0.1:${ports.http}`;
  let c: Child | undefined;
  const start = async (): Promise<void> => {
    c = spawnChild(CLICKHOUSE_SERVER_BIN, [`--config-file=${configFile}`], logFile);
    const started = c;
    await waitFor(
      `clickhouse-server ${o.name}`,
      async () => (await fetch(`${url}/ping`, { signal: AbortSignal.timeout(1000) })).ok,
      started,
      logFile,
    );
  };
  await start();
  return {
    name: o.name,
    url,
    httpPort: ports.http,
    tcpPort: ports.tcp,
    dir: data,
    stop: async () => {
      if (c) await stopChild(c);
    },
    kill: async () => {
      if (c) await stopChild(c, 0);
    },
    start,
    running: () => c !== undefined && c.child.exitCode === null && c.child.signalCode === null,
    pid: () => c?.child.pid,
    freeze: () => c?.child.kill('SIGSTOP'),
    thaw: () => c?.child.kill('SIGCONT'),
  };
}

/** Runs one statement over HTTP (test setup and assertions; the store itself uses @clickhouse/client). */
export async function clickHouseSql(
  url: string,
  sql: string,
  settings: Record<string, string | number> = {},
): Promise<string> {
  const query = new URLSearchParams(
    Object.entries(settings).map(([k, v]): [string, string] => [k, String(v)]),
  );
  let res: Response;
  try {
    res = await fetch(`${url}/?${query}`, { method: 'POST', body: sql, signal: AbortSignal.timeout(30_000) });
  } catch (error) {
    throw new Error(`ClickHouse at ${url} did not answer ${JSON.stringify(sql.slice(0, 80))}`, {
      cause: error,
    });
  }
  const text = await res.text();
  if (!res.ok) throw new Error(`ClickHouse ${res.status}: ${text.trim()}`);
  return text;
}

export interface ClickHouseHarness {
  dir: string;
  nodes: ClickHouseNode[];
  zooKeeper?: ZooKeeperServer;
  /** The first node's URL. */
  url: string;
  /** Cluster name when started with shards. */
  cluster?: string;
  stop(): Promise<void>;
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'agentrt-clickhouse-'));
}

/** One single-node server in a fresh temp dir. */
export async function startClickHouse(): Promise<ClickHouseHarness> {
  const dir = tempDir();
  try {
    const node = await startClickHouseNode({ dir, name: 'ch1' });
    return {
      dir,
      nodes: [node],
      url: node.url,
      stop: async () => {
        await node.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * A cluster on this machine: `shards` servers, each one shard with `replicas` replicas (each its own
 * server), all naming the same `<remote_servers>` cluster, with ZooKeeper for ON CLUSTER DDL and
 * ReplicatedMergeTree (macros `shard` and `replica` per server).
 */
export async function startClickHouseCluster(
  options: { shards?: number; replicas?: number; name?: string } = {},
): Promise<ClickHouseHarness> {
  const shards = options.shards ?? 2;
  const replicas = options.replicas ?? 1;
  const name = options.name ?? 'agentrt_cluster';
  const dir = tempDir();
  const nodes: ClickHouseNode[] = [];
  let zooKeeper: ZooKeeperServer | undefined;
  try {
    zooKeeper = await startZooKeeper(dir);
    const layout: { http: number; tcp: number; interserver: number }[][] = [];
    for (let s = 0; s < shards; s++) {
      const row = [];
      for (let r = 0; r < replicas; r++)
        row.push({ http: await freePort(), tcp: await freePort(), interserver: await freePort() });
      layout.push(row);
    }
    const cluster = { name, shards: layout.map((row) => row.map((p) => p.tcp)) };
    const started = await Promise.all(
      layout.flatMap((row, s) =>
        row.map((ports, r) =>
          startClickHouseNode({
            dir,
            name: `shard${s + 1}-replica${r + 1}`,
            cluster,
            zooKeeperPort: zooKeeper!.port,
            macros: { shard: String(s + 1), replica: `replica${r + 1}` },
            ports,
          }),
        ),
      ),
    );
    nodes.push(...started);
    // Each server's DDL worker connects to ZooKeeper on its own schedule (retrying after a failed
    // first try): DDL ON CLUSTER sent before every node's worker runs waits for it. Wait until one
    // runs everywhere.
    const deadline = Date.now() + 2 * START_TIMEOUT_MS;
    for (;;) {
      // 18.16 can crash (SIGSEGV in its ZooKeeper client) when its first ZooKeeper handshake is
      // dropped, as a loaded ZooKeeper may do: such a node is started again on its own data.
      for (const n of nodes) if (!n.running()) await n.start();
      try {
        await clickHouseSql(nodes[0]!.url, `CREATE DATABASE IF NOT EXISTS harness_ready ON CLUSTER ${name}`, {
          distributed_ddl_task_timeout: 2,
        });
        break;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  } catch (error) {
    await Promise.all(nodes.map((n) => n.stop()));
    await zooKeeper?.stop();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    dir,
    nodes,
    zooKeeper,
    url: nodes[0]!.url,
    cluster: name,
    stop: async () => {
      await Promise.all(nodes.map((n) => n.stop()));
      await zooKeeper?.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

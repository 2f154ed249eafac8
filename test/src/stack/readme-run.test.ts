/**
 * Every command block of every README in the repo, run as a user pastes it.
 *
 * Each README's ```sh / ```bash / ```shell blocks run in order, from the repository root, with the
 * exact text (comments dropped, `\`-continued lines joined), inside a bubblewrap sandbox with its own
 * loopback network (so the documented ports 4318, 8080, 8787, ... are free and need no rewriting) and
 * its own PID namespace (nothing a block starts outlives the README). `.data/` and `$HOME` are scratch
 * directories there, and so is /tmp, so nothing lands in your checkout's data. A command passes when it exits 0;
 * `curl` runs with `--fail-with-body` added, so an HTTP error answer fails it (a line with `-i` shows
 * the status on purpose and is exempt).
 *
 * How a block runs is set by the HTML comment on the line before its fence (blank lines between are
 * fine). The convention, for everyone who adds a README block:
 *
 *   (no marker)                          run each line, in order, after the README's earlier blocks
 *   <!-- readme-test: background ready=<url>[,<url>...] -->
 *                                        each line is a server: start it, leave it running for the
 *                                        README's later blocks, wait until every URL answers
 *   <!-- readme-test: stack -->          starts the local stack (`npm start ...`); at most one in the repo
 *   <!-- readme-test: running-stack -->  run against that stack, after it is up (any README may have these;
 *                                        they run after the stack block, in README order)
 *   <!-- readme-test: file <name> -->    (on a ```js/```ts/... block) write the block to <name>; a README with
 *                                        file blocks runs its commands in a scratch directory that holds
 *                                        them and links the repo's node_modules (so `node agent.mjs` works)
 *   <!-- readme-test: static -->         same as no marker (kept for the main README's doctor block)
 *   <!-- readme-test: ci -->             what CI runs itself (`npm install`/`npm ci`, `npm test`); checked
 *                                        against .ci/run here, not run
 *   <!-- readme-test: manual <reason> -->
 *                                        cannot run here (Docker engine, kubectl, a cluster); the reason is
 *                                        printed. readme.test.ts still checks each command statically.
 *
 * The test prints how many blocks and commands it ran. A README command that stops working fails it.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { allReadmeBlocks, type ShellBlock } from './readme-commands.js';
import type { SandboxPlan, SandboxResult, SandboxStep } from './readme-sandbox.js';
import { repoRoot } from './repo.js';

const run = promisify(execFile);
const SANDBOX_MAIN = join(repoRoot, 'test/dist/stack/readme-sandbox.js');
const COMMAND_TIMEOUT_MS = 300_000;
const READY_TIMEOUT_MS = 300_000;
const KNOWN_KINDS = new Set(['background', 'stack', 'running-stack', 'static', 'ci', 'manual', 'file']);

type Block = ShellBlock & { file: string };

const blocks = allReadmeBlocks();

function stepOf(block: Block): SandboxStep {
  const kind =
    block.marker === 'background' || block.marker === 'stack' || block.marker === 'file'
      ? block.marker
      : 'run';
  const ready = /(?:^|\s)ready=(\S+)/.exec(block.markerArgs)?.[1]?.split(',') ?? [];
  return { file: block.file, line: block.line, kind, commands: block.commands, ready };
}

/** The sandbox sessions: one per README for its own blocks, and one for the stack and every running-stack block. */
function sessions(): { name: string; steps: SandboxStep[] }[] {
  const out: { name: string; steps: SandboxStep[] }[] = [];
  const byFile = new Map<string, SandboxStep[]>();
  for (const block of blocks) {
    if (block.marker && ['ci', 'manual', 'stack', 'running-stack'].includes(block.marker)) continue;
    const steps = byFile.get(block.file) ?? [];
    steps.push(stepOf(block));
    byFile.set(block.file, steps);
  }
  for (const [file, steps] of byFile) out.push({ name: file, steps });
  const stack = blocks.filter((b) => b.marker === 'stack');
  const onStack = blocks.filter((b) => b.marker === 'running-stack');
  if (stack.length || onStack.length)
    out.push({ name: 'the local stack (npm start)', steps: [...stack, ...onStack].map(stepOf) });
  return out;
}

/**
 * What README blocks edit in the checkout: the "Develop an agent" walkthrough saves a change to the
 * custom agent, the dev loop rebuilds it (dist, tsconfig.tsbuildinfo), and the original goes back.
 * Each sandbox gets a copy of its own bound over it, so tests running beside this one (the custom
 * agent's own, hot reload, the image builds) never see the edit. A whole folder: `sed -i` renames
 * over the file it edits, which a file bind mount refuses.
 */
const EDITED_BY_READMES = ['examples/custom-agent'];

/** bwrap arguments binding a copy in `scratch` over each folder READMEs edit. */
async function privateCopies(scratch: string): Promise<string[]> {
  const binds: string[] = [];
  for (const path of EDITED_BY_READMES) {
    const copy = join(scratch, 'checkout', path);
    await cp(join(repoRoot, path), copy, { recursive: true });
    binds.push('--bind', copy, join(repoRoot, path));
  }
  return binds;
}

let scratchRoot: string | undefined;
let sessionCount = 0;
const tally = { run: 0, commands: 0, ms: 0, files: 0 };

async function runSession(name: string, steps: SandboxStep[]): Promise<SandboxResult[]> {
  // Not under /tmp: the sandbox gets its own /tmp (README commands may write there).
  // Short paths: HOME and .data live here, and the runtime's per-session Unix sockets under them
  // must fit in 108 bytes (sun_path).
  scratchRoot ??= await mkdtemp(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'ar-'));
  const scratch = join(scratchRoot, String(++sessionCount));
  console.log(`README sandbox ${scratch}: ${name}`);
  const data = join(scratch, 'data');
  await mkdir(data, { recursive: true });
  await mkdir(join(scratch, 'tmp'), { recursive: true });
  await mkdir(join(repoRoot, '.data'), { recursive: true });
  let cwd = repoRoot;
  if (steps.some((s) => s.kind === 'file')) {
    cwd = join(scratch, 'work');
    await mkdir(cwd, { recursive: true });
    await symlink(join(repoRoot, 'node_modules'), join(cwd, 'node_modules'));
  }
  const plan: SandboxPlan = {
    repoRoot,
    scratch,
    cwd,
    steps,
    commandTimeoutMs: COMMAND_TIMEOUT_MS,
    readyTimeoutMs: READY_TIMEOUT_MS,
  };
  const planFile = join(scratch, 'plan.json');
  await writeFile(planFile, JSON.stringify(plan));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    AGENTRT_MODEL_PROVIDER: 'offline',
    NODE_OPTIONS: '',
    CI: '1',
  };
  for (const name of [
    'AWS_ACCESS_KEY_ID',
    'AWS_PROFILE',
    'OPENAI_API_KEY',
    'AGENTRT_DATA_DIR',
    'OTEL_EXPORTER_OTLP_ENDPOINT',
  ])
    delete env[name];
  const { code, stdout, stderr } = await runBwrap(
    [
      '--dev-bind',
      '/',
      '/',
      '--proc',
      '/proc',
      '--bind',
      join(scratch, 'tmp'),
      '/tmp',
      // A checkout under /tmp (a `mktemp -d` clone) would vanish behind the sandbox's own /tmp.
      ...(isInside(repoRoot, '/tmp') ? ['--bind', repoRoot, repoRoot] : []),
      '--bind',
      data,
      join(repoRoot, '.data'),
      ...(await privateCopies(scratch)),
      '--unshare-net',
      '--unshare-pid',
      '--die-with-parent',
      '--',
      process.execPath,
      SANDBOX_MAIN,
      planFile,
    ],
    { cwd: repoRoot, env },
  );
  expect(code, `the sandbox for ${name} failed:\n${stderr}`).toBe(0);
  const results = stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as SandboxResult);
  if (name === 'self-check') return results;
  for (const r of results) {
    tally.commands++;
    tally.ms += r.kind === 'run' ? r.ms : 0;
  }
  tally.run += new Set(results.map((r) => `${r.file}:${r.line}`)).size;
  tally.files += steps.filter((s) => s.kind === 'file').length;
  return results;
}

/**
 * Runs bwrap, again (up to three tries) when bwrap itself failed to set the sandbox up, before it
 * ran anything: `--dev-bind / /` copies every mount of the host, and one that goes away meanwhile
 * (a container's overlay, as another test stops it) fails the copy ("Can't bind mount …").
 */
async function runBwrap(
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  for (let attempt = 1; ; attempt++) {
    const child = spawn('bwrap', args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    const setUpFailed = code !== 0 && stdout === '' && /^bwrap: Can't (bind )?mount/.test(stderr);
    if (!setUpFailed || attempt === 3) return { code, stdout, stderr };
    console.warn(`bwrap failed to set up (${stderr.trim()}); trying again`);
  }
}

function isInside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

function failures(results: SandboxResult[]): string[] {
  return results
    .filter((r) => r.code !== 0)
    .map(
      (r) =>
        `${r.file}:${r.line} (${r.kind}) exit ${r.code}: ${r.command}\n--- stdout\n${r.stdout.slice(-3000)}\n--- stderr\n${r.stderr.slice(-3000)}`,
    );
}

describe('every README command block, as pasted', () => {
  afterAll(async () => {
    const shell = blocks.filter((b) => b.marker !== 'file');
    const manual = blocks.filter((b) => b.marker === 'manual');
    const ci = blocks.filter((b) => b.marker === 'ci');
    console.log(
      `README blocks: ${shell.length} shell blocks in ${new Set(shell.map((b) => b.file)).size} READMEs; ` +
        `ran ${tally.run} blocks (${tally.commands} commands, ${Math.round(tally.ms / 1000)} s of foreground commands, ${tally.files} files written from code blocks); ` +
        `${ci.length} run by CI itself (${ci.map((b) => `${b.file}:${b.line}`).join(', ')}); ` +
        `${manual.length} not runnable here: ${manual.map((b) => `${b.file}:${b.line} (${b.markerArgs})`).join('; ')}`,
    );
    if (scratchRoot) await rm(scratchRoot, { recursive: true, force: true });
  });

  it('every block carries a known marker (or none), and manual blocks say why', () => {
    for (const b of blocks) {
      if (b.marker)
        expect(KNOWN_KINDS.has(b.marker), `${b.file}:${b.line}: readme-test: ${b.marker}`).toBe(true);
      if (b.marker === 'manual')
        expect(b.markerArgs, `${b.file}:${b.line}: manual needs a reason`).not.toBe('');
      if (b.marker === 'background')
        expect(b.markerArgs, `${b.file}:${b.line}: background needs ready=<url>`).toMatch(/ready=\S+/);
    }
    expect(blocks.filter((b) => b.marker === 'stack').length).toBeLessThanOrEqual(1);
    if (blocks.some((b) => b.marker === 'running-stack'))
      expect(blocks.filter((b) => b.marker === 'stack')).toHaveLength(1);
  });

  it('the ci blocks are what .ci/run and npm test run', async () => {
    const ciRun = await readFile(join(repoRoot, '.ci/run'), 'utf8');
    const pkg = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    for (const b of blocks.filter((x) => x.marker === 'ci')) {
      for (const line of b.commands) {
        for (const part of line.split('&&').map((p) => p.trim())) {
          if (part === 'npm install') expect(ciRun).toMatch(/^npm ci\b/m);
          else if (part === 'npm test') expect(ciRun).toMatch(/^npm test\b/m);
          else if (part === 'npm start') expect(pkg.scripts['start']).toMatch(/\bdev$/);
          else expect.fail(`${b.file}:${b.line}: '${part}' is not something CI runs; give it another marker`);
        }
      }
    }
  });

  it('bubblewrap is there to run them (CI installs it)', async () => {
    await expect(run('bwrap', ['--version'])).resolves.toBeTruthy();
  });

  it('the sandbox reports what fails (so the tests below can fail)', async () => {
    const step = (kind: SandboxStep['kind'], commands: string[], ready: string[] = []): SandboxStep => ({
      file: 'self-check',
      line: 1,
      kind,
      commands,
      ready,
    });
    const results = await runSession('self-check', [
      step('run', ['echo fine', 'exit 3']),
      step('file', ['x.mjs', 'console.log(41 + 1)\n']),
      step('run', ['node x.mjs']),
      step(
        'background',
        ["node -e \"require('http').createServer((q, s) => s.writeHead(500).end('no')).listen(4318)\""],
        ['http://127.0.0.1:4318/'],
      ),
      // An HTTP error answer fails curl (the shim adds --fail-with-body), unless -i asks for the status.
      step('run', ['curl -s http://127.0.0.1:4318/', 'curl -s -i http://127.0.0.1:4318/']),
      step('background', ['exit 1'], ['http://127.0.0.1:4319/']),
    ]);
    expect(results.map((r) => [r.command, r.code])).toEqual([
      ['echo fine', 0],
      ['exit 3', 3],
      ['node x.mjs', 0],
      [expect.stringContaining('createServer'), 0],
      ['curl -s http://127.0.0.1:4318/', 22],
      ['curl -s -i http://127.0.0.1:4318/', 0],
      ['exit 1', 1],
    ]);
    expect(results[2]!.stdout).toBe('42\n');
    expect(results.at(-1)!.stderr).toContain('exited (1) while starting');
  }, 60_000);

  for (const { name, steps } of sessions()) {
    it(
      `${name}: every command works when pasted`,
      async () => {
        const results = await runSession(name, steps);
        expect(failures(results)).toEqual([]);
        const commands = steps.filter((s) => s.kind !== 'file');
        expect(results.length).toBe(commands.reduce((n, s) => n + s.commands.length, 0));
      },
      steps.length * COMMAND_TIMEOUT_MS + READY_TIMEOUT_MS,
    );
  }
});

import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { main } from '@agentrt/cli';
import { describe, expect, it } from 'vitest';
import {
  allReadmeBlocks,
  readmeBlocks,
  shellWords,
  simpleCommands,
  type SimpleCommand,
} from './readme-commands.js';
import { readRepoYaml, repoRoot } from './repo.js';

const run = promisify(execFile);
const rootPackage = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  workspaces: string[];
};

async function usageOf(command: string): Promise<string | undefined> {
  let out = '';
  const code = await main([command, '--help'], {
    stdout: (t) => (out += t),
    stderr: () => {},
    env: {},
    cwd: repoRoot,
  });
  return code === 0 ? out : undefined;
}

/** The subcommands a command's usage lists: `<a|b|c>`, `agentrt <command> <sub> ...` lines, or a `<subcommand>` list. */
function subcommandsOf(command: string, usage: string): string[] {
  const subs = new Set<string>();
  const first = usage.split('\n')[0] ?? '';
  for (const alt of /<([a-z][\w-]*(?:\|[a-z][\w-]*)+)>/.exec(first)?.[1]?.split('|') ?? []) subs.add(alt);
  for (const m of usage.matchAll(new RegExp(`^ +agentrt ${command} ([a-z][\\w-]*)`, 'gm'))) subs.add(m[1]!);
  if (first.includes('<subcommand>'))
    for (const m of usage.matchAll(/^ {2}([a-z][\w-]*) {2,}/gm)) subs.add(m[1]!);
  return [...subs];
}

/** `agentrt <command> ...` as written: the command exists, each flag is one it documents, JSON args parse. */
async function checkAgentrt(args: string[]): Promise<string[]> {
  const [command, ...rest] = args;
  if (!command) return ['agentrt without a command'];
  const usage = await usageOf(command);
  if (!usage) return [`agentrt ${command}: no such command`];
  const problems: string[] = [];
  for (const arg of rest) {
    if (arg.startsWith('--')) {
      const flag = arg.split('=')[0]!;
      const documented = new RegExp(`${flag.replace(/[-]/g, '\\-')}(?![\\w-])`).test(usage);
      if (!documented && flag !== '--help' && flag !== '--')
        problems.push(`agentrt ${command}: unknown flag ${flag}`);
    } else if (arg.startsWith('{')) {
      try {
        JSON.parse(arg);
      } catch {
        problems.push(`agentrt ${command}: argument is not valid JSON: ${arg}`);
      }
    }
  }
  const sub = rest[0];
  if (command === 'runtime' && sub && !new RegExp(`\\b${sub}\\b`).test(usage)) {
    problems.push(`agentrt runtime: no subcommand ${sub}`);
  }
  return problems;
}

const CURL_VALUE_OPTIONS = new Set(['-X', '-H', '-d', '--data', '--data-binary', '--retry', '--retry-delay']);
const CURL_FLAGS = new Set([
  '-s',
  '-S',
  '-sS',
  '-sN',
  '-N',
  '-f',
  '-i',
  '--fail',
  '--retry-all-errors',
  '--fail-with-body',
  '--silent',
  '--show-error',
]);

function checkCurl(args: string[]): string[] {
  const problems: string[] = [];
  const urls: string[] = [];
  let json = false;
  const data: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (CURL_VALUE_OPTIONS.has(arg)) {
      const value = args[++i];
      if (value === undefined) problems.push(`curl: ${arg} needs a value`);
      else if (arg === '-X' && !['GET', 'POST', 'PUT', 'DELETE'].includes(value))
        problems.push(`curl: -X ${value}`);
      else if (arg === '-H') {
        // `name: value`, or `name;` (curl's way to send the header empty)
        if (!/^[A-Za-z0-9-]+(:\s?.+|;)$/.test(value)) problems.push(`curl: bad header ${value}`);
        if (/^content-type:\s*application\/json$/i.test(value)) json = true;
      } else if (arg !== '-X' && !arg.startsWith('--retry')) data.push(value);
    } else if (CURL_FLAGS.has(arg)) {
      continue;
    } else if (arg.startsWith('-')) {
      problems.push(`curl: option ${arg} is not one the README test knows`);
    } else {
      urls.push(arg);
    }
  }
  if (urls.length !== 1) problems.push(`curl: expected one URL, got ${urls.length}`);
  for (const url of urls) {
    if (!URL.canParse(url) || !url.startsWith('http')) problems.push(`curl: not an http URL: ${url}`);
  }
  if (json) {
    for (const body of data) {
      try {
        JSON.parse(body.replace(/\$\([^)]*\)/g, '0'));
      } catch {
        problems.push(`curl: -d is not JSON: ${body}`);
      }
    }
  }
  return problems;
}

function binExists(name: string): boolean {
  return rootPackage.workspaces.some((ws) => {
    const file = join(repoRoot, ws, 'package.json');
    if (!existsSync(file)) return false;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { bin?: Record<string, string> };
    return Boolean(pkg.bin?.[name]);
  });
}

/** Resources the READMEs' `kubectl get` names: built-in kinds and the plurals of deploy/k8s/crds. */
const KUBECTL_RESOURCES = new Set([
  'pods',
  'services',
  'deployments',
  'leases',
  ...readdirSync(join(repoRoot, 'deploy/k8s/crds')).map((f) => f.split('_')[1]!.replace(/\.yaml$/, '')),
]);

/** kubectl as the READMEs use it: apply -f/-k and kustomize of repo paths, get of known resources, port-forward, rollout. */
function checkKubectl(args: string[]): string[] {
  const rest = args[0] === '-n' ? args.slice(2) : args;
  const [sub, ...more] = rest;
  switch (sub) {
    case 'apply':
      if (more[0] !== '-f' && more[0] !== '-k') return ['kubectl apply: neither -f nor -k'];
      return existsSync(join(repoRoot, more[1] ?? '')) ? [] : [`kubectl apply: no ${more[1]}`];
    case 'kustomize':
      return existsSync(join(repoRoot, more[0] ?? '', 'kustomization.yaml'))
        ? []
        : [`kubectl kustomize: no kustomization.yaml in ${more[0]}`];
    case 'get':
      return (more[0] ?? '')
        .split(',')
        .filter((r) => !KUBECTL_RESOURCES.has(r))
        .map((r) => `kubectl get: no resource ${r}`);
    case 'port-forward':
    case 'rollout':
      return [];
    default:
      return [`kubectl ${sub}?`];
  }
}

/** `sed -i 's/<pattern>/<replacement>/' <file>`: a file of the repo, and the pattern is in it. */
function checkSed(args: string[]): string[] {
  const [flag, script = '', file = ''] = args;
  if (flag !== '-i') return [`sed ${flag}: only sed -i is used`];
  if (!existsSync(join(repoRoot, file))) return [`sed: no file ${file}`];
  const pattern = /^s\/((?:\\.|[^/])*)\//.exec(script)?.[1];
  if (pattern === undefined) return [`sed: '${script}' is not s/<pattern>/<replacement>/`];
  return new RegExp(pattern).test(readFileSync(join(repoRoot, file), 'utf8'))
    ? []
    : [`sed: ${file} no longer holds /${pattern}/`];
}

/** `until <commands>; do <commands>; done` (or while): each command of the loop, checked. */
async function checkLoop(args: string[]): Promise<string[]> {
  const commands: string[][] = [[]];
  for (const word of args) {
    const ends = word.endsWith(';');
    const w = ends ? word.slice(0, -1) : word;
    if (['|', 'do', 'done'].includes(w)) commands.push([]);
    else if (w) commands.at(-1)!.push(w);
    if (ends) commands.push([]);
  }
  const problems: string[] = [];
  for (const argv of commands.filter((c) => c.length > 0))
    problems.push(...(await checkCommand({ env: {}, argv })));
  return problems;
}

async function checkCommand({ argv }: SimpleCommand): Promise<string[]> {
  const [program, ...args] = argv;
  switch (program) {
    case 'npm': {
      const [sub, ...rest] = args;
      if (sub === 'install' || sub === 'ci' || sub === 'pack' || sub === 'init') return [];
      const script = sub === 'run' ? rest[0] : sub;
      if (!script || !rootPackage.scripts[script])
        return [`npm ${sub}: no script '${script}' in package.json`];
      const passed = rest.slice(rest.indexOf('--') + 1);
      if (script === 'start' && rest.includes('--')) {
        if (!/\bdev$/.test(rootPackage.scripts['start']!)) return ['npm start does not end in agentrt dev'];
        return checkAgentrt(['dev', ...passed]);
      }
      return [];
    }
    case 'npx':
      if (args[0] === 'agentrt') return checkAgentrt(args.slice(1));
      if (args[0] === 'tsc' || args[0] === 'vitest')
        return existsSync(join(repoRoot, 'node_modules', '.bin', args[0]))
          ? []
          : [`npx ${args[0]}: not installed`];
      return binExists(args[0] ?? '') ? [] : [`npx ${args[0]}: no workspace has that bin`];
    case 'agentrt':
      return checkAgentrt(args);
    case 'node': {
      const problems: string[] = [];
      const require = createRequire(join(repoRoot, 'package.json'));
      for (let i = 0; i < args.length; i++) {
        if (args[i] === '--require' || args[i] === '--import') {
          const specifier = args[++i] ?? '';
          try {
            require.resolve(specifier);
          } catch {
            problems.push(`node ${args[i - 1]} ${specifier}: cannot be resolved from the repo root`);
          }
        }
      }
      return problems;
    }
    case 'curl':
      return checkCurl(args);
    case 'cd':
      return existsSync(join(repoRoot, args[0] ?? '')) || args[0]?.startsWith('/tmp/')
        ? []
        : [`cd ${args[0]}: no such directory in the repo`];
    case 'mkdir':
    case 'cp':
      return [];
    case 'kubectl':
      return checkKubectl(args);
    case 'grep': {
      // What it reads: its input (a pattern alone: the end of a pipe), a file of the repo, or one an
      // earlier command wrote under .data/.
      if (args.filter((a) => !a.startsWith('-')).length === 1) return [];
      const file = args.at(-1) ?? '';
      return file.startsWith('.data/') || existsSync(join(repoRoot, file)) ? [] : [`grep: no file ${file}`];
    }
    case 'docker': {
      if (args[0] === 'build' || args[0] === 'buildx') {
        const file = args[args.indexOf('-f') + 1] ?? '';
        return existsSync(join(repoRoot, file)) ? [] : [`docker ${args[0]}: no Dockerfile ${file}`];
      }
      if (args[0] === 'run') return [];
      if (args[0] !== 'compose') return [`docker ${args[0]}: only docker compose/build/run are used`];
      const compose = readRepoYaml('docker-compose.yml') as {
        services: Record<string, { profiles?: string[] }>;
      };
      const profiles = new Set(Object.values(compose.services).flatMap((s) => s.profiles ?? []));
      const problems: string[] = [];
      for (let i = 1; i < args.length; i++) {
        if (args[i] === '--profile') {
          if (!profiles.has(args[i + 1] ?? '')) problems.push(`no compose profile ${args[i + 1]}`);
          i++;
        } else if (!['up', '--build', '-d', 'down', 'config'].includes(args[i]!))
          problems.push(`docker compose ${args[i]}?`);
      }
      return problems;
    }
    case '.':
    case 'sh':
      return existsSync(join(repoRoot, args[0] ?? '')) ? [] : [`${program} ${args[0]}: no such file`];
    case 'printf':
    case 'echo':
    case 'sleep':
      return [];
    case 'sed':
      return checkSed(args);
    case 'until':
    case 'while':
      return checkLoop(args);
    case 'podman': {
      if (args[0] !== 'build') return [`podman ${args[0]}: only podman build is used`];
      const context = args.at(-1) ?? '';
      return context.startsWith('/tmp/') || existsSync(join(repoRoot, context))
        ? []
        : [`podman build: no build context ${context}`];
    }
    case 'clickhouse-server': {
      // Debian's package config, with the data paths moved out of /var/lib after `--`.
      const config = args.find((a) => a.startsWith('--config-file='))?.slice('--config-file='.length);
      if (config !== '/etc/clickhouse-server/config.xml')
        return ['clickhouse-server: not the package config'];
      return args.includes('--') ? [] : ['clickhouse-server: no data paths of its own (after --)'];
    }
    default:
      return [`${program}: a command the README test does not know; add a check for it`];
  }
}

describe('README', () => {
  const blocks = readmeBlocks();
  const everyReadme = allReadmeBlocks().filter((b) => b.marker !== 'file');

  it('opens with the two commands a newcomer runs', () => {
    const first = blocks[0]!.commands.join('\n');
    expect(first).toMatch(/^npm install && npm start\b/m);
    expect(first).toMatch(/^npm test\b/m);
  });

  it('has the blocks the other tests run (static here, running-stack in the dev e2e test)', () => {
    expect(blocks.filter((b) => b.marker === 'static').length).toBeGreaterThan(0);
    expect(blocks.filter((b) => b.marker === 'running-stack').length).toBeGreaterThan(0);
  });

  it('every shell command of every README is valid: the command exists, its flags parse, its JSON parses', async () => {
    const problems: string[] = [];
    for (const block of everyReadme) {
      for (const line of block.commands) {
        for (const command of simpleCommands(line)) {
          for (const problem of await checkCommand(command))
            problems.push(`${block.file}:${block.line}: ${problem}`);
        }
      }
    }
    expect(problems).toEqual([]);
    console.log(
      `README static check: ${everyReadme.length} shell blocks in ${new Set(everyReadme.map((b) => b.file)).size} READMEs`,
    );
  });

  it('the checker rejects what it should (so the test above can fail)', async () => {
    const check = async (line: string) => (await Promise.all(simpleCommands(line).map(checkCommand))).flat();
    expect(await check('npx agentrt dev --no-such-flag')).toEqual([
      'agentrt dev: unknown flag --no-such-flag',
    ]);
    expect(await check('npx agentrt frobnicate')).toEqual(['agentrt frobnicate: no such command']);
    expect(
      await check("curl -sS http://127.0.0.1:4318/x -H 'content-type: application/json' -d '{bad'"),
    ).toEqual(['curl: -d is not JSON: {bad']);
    expect(await check('npm run no-such-script')).toEqual([
      "npm run: no script 'no-such-script' in package.json",
    ]);
    expect(await check('node --require @agentrt/no-such-package app.js')).toHaveLength(1);
    expect(await check('docker compose --profile nope up')).toEqual(['no compose profile nope']);
    expect(await check('rm -rf /')).toHaveLength(1);
    expect(await check("sed -i 's/no such text anywhere/x/' examples/custom-agent/src/app.ts")).toEqual([
      'sed: examples/custom-agent/src/app.ts no longer holds /no such text anywhere/',
    ]);
    expect(await check('until npx agentrt frobnicate | grep x; do rm -rf /; done')).toHaveLength(2);
  });

  it('the command table names every agentrt command and subcommand (from their --help)', async () => {
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## The `agentrt` command'));
    const rows = section.split('\n').filter((l) => l.startsWith('| `agentrt '));
    let top = '';
    await main(['--help'], { stdout: (t) => (top += t), stderr: () => {}, env: {}, cwd: repoRoot });
    const names = [...top.matchAll(/^ {2}([a-z][\w-]*) {2,}/gm)].map((m) => m[1]!);
    expect(names.length).toBeGreaterThan(5);
    const missing: string[] = [];
    for (const name of names) {
      const mine = rows.filter((r) => r.includes(`agentrt ${name}`)).join('\n');
      if (!mine) {
        missing.push(`agentrt ${name}`);
        continue;
      }
      for (const sub of subcommandsOf(name, (await usageOf(name)) ?? '')) {
        if (!new RegExp(`[\\s\`/]${sub}\\b`).test(mine)) missing.push(`agentrt ${name} ${sub}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('no install line asks the npm registry for an @agentrt package (they are not published)', async () => {
    const { stdout } = await run('git', ['ls-files', '--', '*.md', 'collector/ui/src'], { cwd: repoRoot });
    const offenders: string[] = [];
    for (const file of stdout.split('\n').filter(Boolean)) {
      const text = readFileSync(join(repoRoot, file), 'utf8');
      for (const [i, line] of text.split('\n').entries())
        if (/npm (install|i|add)\b[^\n]*?\s@agentrt\//.test(line))
          offenders.push(`${file}:${i + 1}: ${line.trim()}`);
    }
    expect(offenders).toEqual([]);
  });

  it('the agentrt bin is linked by npm install on a fresh clone (a tracked, executable file, not dist/)', async () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'packages/cli/package.json'), 'utf8')) as {
      bin: Record<string, string>;
    };
    const target = join('packages/cli', pkg.bin['agentrt']!);
    // npm links a bin only when its file exists at install time; dist/ does not exist before the build.
    expect(target).not.toMatch(/(^|\/)dist\//);
    const { stdout: tracked } = await run('git', ['ls-files', '-s', '--', target], { cwd: repoRoot });
    expect(tracked, `${target} is tracked by git`).toMatch(/^100755 /);
  });

  it('splits shell words as sh does for these lines', () => {
    expect(shellWords(`a 'b c' "d \\"e\\"" f\\ g`)).toEqual(['a', 'b c', 'd "e"', 'f g']);
    expect(shellWords(`-d '{"t":"'$(date +%s)'000"}'`)).toEqual(['-d', '{"t":"$(date +%s)000"}']);
    expect(simpleCommands('X=1 npm install && npm start -- --demo')).toEqual([
      { env: { X: '1' }, argv: ['npm', 'install'] },
      { env: {}, argv: ['npm', 'start', '--', '--demo'] },
    ]);
  });

  it('runs the static blocks as written', async () => {
    const bin = join(repoRoot, 'node_modules', '.bin');
    const env = { ...process.env, PATH: `${bin}:${join(process.execPath, '..')}:${process.env['PATH']}` };
    for (const block of blocks.filter((b) => b.marker === 'static')) {
      for (const line of block.commands) {
        const result = await run('bash', ['-c', line], { cwd: repoRoot, env, timeout: 60_000 }).catch(
          (error: { code?: number; stdout?: string; stderr?: string }) => error,
        );
        expect(result, `${line}\n${JSON.stringify(result)}`).not.toHaveProperty('code');
        expect(result.stdout).toMatch(/node\s+v\d+/);
      }
    }
  });
});

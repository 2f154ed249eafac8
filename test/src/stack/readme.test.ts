import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { main } from '@agentrt/cli';
import { describe, expect, it } from 'vitest';
import { readmeBlocks, shellWords, simpleCommands, type SimpleCommand } from './readme-commands.js';
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

const CURL_VALUE_OPTIONS = new Set(['-X', '-H', '-d', '--data', '--data-binary']);
const CURL_FLAGS = new Set(['-s', '-S', '-sS', '-N', '-f', '-i', '--fail', '--silent', '--show-error']);

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
        if (!/^[A-Za-z0-9-]+:\s?.+$/.test(value)) problems.push(`curl: bad header ${value}`);
        if (/^content-type:\s*application\/json$/i.test(value)) json = true;
      } else if (arg !== '-X') data.push(value);
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
        JSON.parse(body);
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

async function checkCommand({ argv }: SimpleCommand): Promise<string[]> {
  const [program, ...args] = argv;
  switch (program) {
    case 'npm': {
      const [sub, ...rest] = args;
      if (sub === 'install' || sub === 'ci') return [];
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
    case 'docker': {
      if (args[0] !== 'compose') return [`docker ${args[0]}: only docker compose is used`];
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
      return existsSync(join(repoRoot, args[0] ?? '')) ? [] : [`. ${args[0]}: no such file`];
    default:
      return [`${program}: a command the README test does not know; add a check for it`];
  }
}

describe('README', () => {
  const blocks = readmeBlocks();

  it('opens with the two commands a newcomer runs', () => {
    const first = blocks[0]!.commands.join('\n');
    expect(first).toMatch(/^npm install && npm start\b/m);
    expect(first).toMatch(/^npm test\b/m);
  });

  it('has the blocks the other tests run (static here, running-stack in the dev e2e test)', () => {
    expect(blocks.filter((b) => b.marker === 'static').length).toBeGreaterThan(0);
    expect(blocks.filter((b) => b.marker === 'running-stack').length).toBeGreaterThan(0);
  });

  it('every shell command in it is valid: the command exists, its flags parse, its JSON parses', async () => {
    const problems: string[] = [];
    for (const block of blocks) {
      for (const line of block.commands) {
        for (const command of simpleCommands(line)) {
          for (const problem of await checkCommand(command))
            problems.push(`README.md:${block.line}: ${problem}`);
        }
      }
    }
    expect(problems).toEqual([]);
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

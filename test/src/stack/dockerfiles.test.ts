import { join } from 'node:path';
import { checkDockerfile } from '@agentrt/example-models/testing';
import { describe, expect, it } from 'vitest';
import { lintDockerfile } from './dockerfile-lint.js';
import { readRepoFile, readRepoYaml, repoRoot } from './repo.js';

interface ComposeBuild {
  services: Record<string, { build?: { dockerfile?: string; target?: string }; healthcheck?: unknown }>;
}

/** Every Dockerfile docker-compose.yml builds, with the stages it builds and which have a compose health check. */
function composeDockerfiles(): Map<string, { targets: string[]; composeHealthchecks: string[] }> {
  const compose = readRepoYaml('docker-compose.yml') as ComposeBuild;
  const files = new Map<string, { targets: string[]; composeHealthchecks: string[] }>();
  for (const service of Object.values(compose.services)) {
    if (!service.build) continue;
    const path = service.build.dockerfile ?? 'Dockerfile';
    const entry = files.get(path) ?? { targets: [], composeHealthchecks: [] };
    const target = service.build.target;
    if (target) entry.targets.push(target);
    if (service.healthcheck) entry.composeHealthchecks.push(target ?? '');
    files.set(path, entry);
  }
  return files;
}

describe('Dockerfiles', () => {
  it.each([...composeDockerfiles()])('%s passes the lint rules', (path, { targets, composeHealthchecks }) => {
    const text = readRepoFile(path);
    const lastStage = [...text.matchAll(/^FROM .+ AS (\S+)$/gm)].at(-1)?.[1] ?? '';
    const options =
      targets.length > 0
        ? { targets, composeHealthchecks }
        : { composeHealthchecks: composeHealthchecks.map((t) => t || lastStage) };
    expect(lintDockerfile(text, options)).toEqual([]);
  });

  it('deploy/Dockerfile builds both images for the target platform from one build on $BUILDPLATFORM', () => {
    const text = readRepoFile('deploy/Dockerfile');
    expect(text).toMatch(/^FROM --platform=\$BUILDPLATFORM \S+ AS build$/m);
    // Production dependencies install on the target platform (no --platform), native modules match.
    expect(text).toMatch(/^FROM node:[\d.]+-\S+ AS collector-deps$/m);
    expect(text).toMatch(/npm ci --omit=dev/);
  });

  // The build args each example's README passes to the shared examples/Dockerfile.
  it.each([
    ['sdk-agent', {}, 8080, '/ping'],
    ['custom-agent', {}, 8080, '/ping'],
    ['mcp-server', { PORT: '8000', HEALTH_PATH: '' }, 8000, ''],
    ['a2a-agent', { PORT: '9000' }, 9000, '/ping'],
  ] as const)('examples/Dockerfile builds %s for its contract', (example, args, port, healthPath) => {
    const buildArgs = { EXAMPLE: example, ...args };
    const readme = readRepoFile(`examples/${example}/README.md`);
    const flags = Object.entries(buildArgs)
      .map(([k, v]) => `--build-arg ${k}=${v}`)
      .join(' ');
    expect(readme).toContain(`docker build -f examples/Dockerfile ${flags} -t agentrt/${example} .`);
    const expected = { port, healthPath, workdir: `/app/examples/${example}` };
    expect(checkDockerfile(join(repoRoot, 'examples', 'Dockerfile'), expected, buildArgs)).toEqual([]);
  });

  it('the lint rules catch what they promise to catch', () => {
    const bad = [
      'FROM node:latest',
      'ADD https://example.com/tool.tgz /opt/',
      'COPY . /app',
      'CMD ["node", "app.js"]',
    ].join('\n');
    const problems = lintDockerfile(bad);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/not multi-stage/),
        expect.stringMatching(/node:latest is not pinned/),
        expect.stringMatching(/line 2: ADD of a URL/),
        expect.stringMatching(/runs as root/),
        expect.stringMatching(/does not EXPOSE/),
        expect.stringMatching(/no HEALTHCHECK/),
      ]),
    );
    const platform = lintDockerfile(
      'FROM --platform=linux/amd64 node:24.1.0 AS a\nFROM node:24.1.0\nUSER root\nEXPOSE 1\nHEALTHCHECK CMD true\n',
    );
    expect(platform).toEqual([
      expect.stringMatching(/--platform=linux\/amd64 is hard-coded/),
      expect.stringMatching(/runs as root/),
    ]);
    expect(
      lintDockerfile('FROM node:24.1.0 AS a\nFROM a\nUSER node\nEXPOSE 1\n', { composeHealthchecks: ['1'] }),
    ).toEqual([]);
    expect(lintDockerfile('FROM node:24.1.0\nFROM node:24.1.0\n', { targets: ['missing'] })).toEqual([
      "target stage 'missing' does not exist",
    ]);
    expect(
      lintDockerfile(
        'FROM node:24.1.0 AS a\nFROM a\nUSER node\nEXPOSE 1\nHEALTHCHECK CMD true\nFROBNICATE x\n',
      ),
    ).toEqual([expect.stringMatching(/line 6: .*FROBNICATE/i)]);
  });
});

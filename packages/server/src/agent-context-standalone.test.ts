import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@agentrt/kit';
import { afterAll, describe, expect, it } from 'vitest';

const packageDir = fileURLToPath(new URL('..', import.meta.url));

/** The README's Koa example: the js block marked `<!-- readme-test: file app.mjs -->`. */
function readmeKoaExample(): string {
  const readme = readFileSync(join(packageDir, 'README.md'), 'utf8');
  const match = /<!-- readme-test: file app\.mjs -->\s*```js\n([\s\S]*?)\n```/.exec(readme);
  if (!match) throw new Error('packages/server/README.md has no app.mjs block');
  return `${match[1]}\n`;
}

/**
 * `node app.mjs` with exactly the README's middleware example, no preload, no SDK: agentContext()
 * sets up a context manager and the propagators itself (saying so once), so getActiveSessionId()
 * answers the session header's value instead of nothing.
 */
describe('agentContext() on its own (the README example, run with plain node)', () => {
  // Inside the package, so `@agentrt/server` resolves as it does for a project that installed it.
  const dir = mkdtempSync(join(packageDir, '.readme-app-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('answers the session of the request, and says once that it set up the context', async () => {
    const port = await freePort();
    const source = readmeKoaExample();
    expect(source).toContain('app.listen(3000)');
    writeFileSync(
      join(dir, 'app.mjs'),
      source.replace('app.listen(3000)', `app.listen(${port}, '127.0.0.1')`),
    );
    const child = spawn(process.execPath, ['app.mjs'], {
      cwd: dir,
      env: { PATH: process.env['PATH'] ?? '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    try {
      const get = async (session: string) => {
        for (let i = 0; ; i++) {
          try {
            const res = await fetch(`http://127.0.0.1:${port}/`, {
              headers: { 'x-cloud-agent-runtime-session-id': session },
            });
            return (await res.json()) as unknown;
          } catch (error) {
            if (i > 100 || child.exitCode !== null)
              throw new Error(`app.mjs did not answer: ${stderr}`, { cause: error });
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      };
      expect(await get('3f1c2a9e-0000-4000-8000-000000000002')).toEqual({
        session: '3f1c2a9e-0000-4000-8000-000000000002',
      });
      expect(await get('3f1c2a9e-0000-4000-8000-000000000003')).toEqual({
        session: '3f1c2a9e-0000-4000-8000-000000000003',
      });
      expect(stderr.match(/no OpenTelemetry SDK is registered/g)).toHaveLength(1);
    } finally {
      child.kill('SIGKILL');
    }
  }, 30_000);
});

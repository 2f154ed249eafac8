/**
 * `agentrt dev`'s hot reload against a real runtime host: a copy of the custom agent example is a
 * runtime; a save of its source rebuilds it and the next invocation of the same session answers
 * from the new code; a syntax error keeps the old worker serving and reports the error (the
 * terminal line, and the Inspector, from the log record the collector gets).
 */
import { cpSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRuntimeClient } from '@agentrt/runtime';
import { type ReloadEvent, reportToCollector, startHotReload } from '@agentrt/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, type RuntimeStack, startRuntimeStack } from '../observability/runtime-stack.js';
import { buildUiIfStale, hasChromium, usePage } from '../ui/browser.js';

const WORK = join(REPO_ROOT, 'test-results', `hot-reload-${process.pid}`);
const AGENT = join(WORK, 'agent');
const APP = join(AGENT, 'src', 'app.ts');
const SESSION = `hot-reload-session-${'0'.repeat(24)}`;
const ORIGINAL = 'content: [{ text: answer.text }]';

let stack: RuntimeStack;
let reloader: { close(): void };
const lines: string[] = [];
const events: ReloadEvent[] = [];
/** Called as the reload asks the runtime for fresh workers (after the build). */
let onRestart = (): void => undefined;

/** The custom agent example as a folder of its own (its imports resolve from the repo's node_modules). */
function copyAgent(): void {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(AGENT, { recursive: true });
  const example = join(REPO_ROOT, 'examples', 'custom-agent');
  for (const part of ['src', 'dist', 'package.json'])
    cpSync(join(example, part), join(AGENT, part), { recursive: true });
  writeFileSync(
    join(AGENT, 'tsconfig.json'),
    JSON.stringify({
      extends: join(REPO_ROOT, 'tsconfig.base.json'),
      compilerOptions: { rootDir: 'src', outDir: 'dist' },
      include: ['src'],
    }),
  );
}

const ask = async (): Promise<string> => {
  const { statusCode, body } = await stack.invoke(JSON.stringify({ input: { prompt: 'hello' } }), SESSION);
  expect(statusCode).toBe(200);
  return (JSON.parse(body) as { output: { message: { content: { text: string }[] } } }).output.message
    .content[0]!.text;
};

const pidOfSession = async (client: ReturnType<typeof createRuntimeClient>) =>
  (await client.activeSessions()).find((s) => s.sessionId === SESSION)?.pid;

/** Saves the app with `replacement` for the original answer, and waits for the reload's event. */
async function save(replacement: string): Promise<ReloadEvent> {
  const before = events.length;
  // The answer's line (`message: { role: 'assistant', content: [...] },`) with another content.
  // Saved as sed -i, vim and editors' "safe write" save: a new file renamed over the old one (Node's
  // recursive watcher lost the file after the first such save; the other saves below write in place).
  const next = readFileSync(APP, 'utf8').replace(/content: \[.*\] \},$/m, `${replacement} },`);
  writeFileSync(`${APP}.tmp`, next);
  renameSync(`${APP}.tmp`, APP);
  await expect.poll(() => events.length, { timeout: 10_000 }).toBeGreaterThan(before);
  return events.at(-1)!;
}

beforeAll(async () => {
  copyAgent();
  stack = await startRuntimeStack({
    name: 'hotreload',
    example: join('..', 'test-results', `hot-reload-${process.pid}`, 'agent'),
    // As agentrt dev runs it: file:// runtimes in place, not a copy per version.
    runtime: (collector) => ({ fileArtifacts: 'live', allowedOrigins: [collector.url] }),
  });
  // As agentrt dev does: each reload is a log record in the collector, which the Inspector shows.
  const report = reportToCollector(stack.collector.url);
  const client = createRuntimeClient({ url: stack.runtime.url });
  reloader = await startHotReload({
    agents: [{ name: 'hotreload', arn: stack.arn, dir: AGENT }],
    runtime: {
      restartSessions: (arn) => {
        onRestart();
        return client.restartSessions(arn);
      },
    },
    log: (line) => lines.push(line),
    onEvent: (e) => {
      events.push(e);
      report(e);
    },
  });
}, 120_000);

afterAll(async () => {
  reloader?.close();
  await stack?.close();
  rmSync(WORK, { recursive: true, force: true });
}, 60_000);

describe('hot reload', { timeout: 60_000 }, () => {
  const page = usePage('hot-reload');

  it('serves the next invocation of the same session from the saved code', async () => {
    const client = createRuntimeClient({ url: stack.runtime.url });
    const first = await ask();
    expect(first).not.toMatch(/^v2:/);
    const oldPid = await pidOfSession(client);
    // A call sent while the new worker starts waits for it: no 409 while the old one stops, no old code.
    let asked: Promise<string> | undefined;
    onRestart = () => {
      asked = new Promise((r) => setTimeout(r, 20)).then(ask);
    };
    const reloaded = await save('content: [{ text: `v2: ${answer.text}` }]');
    expect(reloaded).toMatchObject({ status: 'reloaded', sessions: 1 });
    expect(lines.at(-1)).toMatch(
      /^↻ hotreload: 1 file\(s\) rebuilt in \d+ ms; 1 session\(s\) on new workers in \d+ ms/,
    );
    // The new worker serves as the reload reports: it started beside the old one.
    const newPid = await pidOfSession(client);
    expect(newPid).not.toBe(oldPid);
    expect(await asked).toBe(`v2: ${first}`);
    onRestart = () => undefined;
    expect(await ask()).toBe(`v2: ${first}`);
    expect(await pidOfSession(client)).toBe(newPid);
  });

  it('keeps the old worker serving when the new code builds but does not start', async () => {
    const client = createRuntimeClient({ url: stack.runtime.url });
    const pid = await pidOfSession(client);
    const app = readFileSync(APP, 'utf8');
    writeFileSync(APP, `${app}\nthrow new Error('boom at load');\n`);
    await expect.poll(() => events.at(-1)?.message ?? '', { timeout: 20_000 }).toContain('boom at load');
    expect(events.at(-1)).toMatchObject({ status: 'failed' });
    expect(await ask()).toMatch(/^v2: /);
    expect(await pidOfSession(client)).toBe(pid);
    writeFileSync(APP, app);
    await expect.poll(() => events.at(-1)?.status, { timeout: 20_000 }).toBe('reloaded');
  });

  it('keeps the old worker serving through a syntax error, and says where it is', async () => {
    const client = createRuntimeClient({ url: stack.runtime.url });
    const pid = await pidOfSession(client);
    const failed = await save('content: [{ text: `v3: ${answer.text}` }}]');
    expect(failed.status).toBe('failed');
    expect(failed.message).toMatch(/^src\/app\.ts:\d+:\d+ /);
    expect(lines.at(-1)).toContain('✖ hotreload: build failed, the running sessions keep the previous code');
    expect(await ask()).toMatch(/^v2: /);
    expect(await pidOfSession(client)).toBe(pid);
    if (hasChromium) {
      // The Inspector of the runtime shows the failed build until one succeeds.
      buildUiIfStale();
      await page().goto(`${stack.collector.url}/#/inspector?host=${encodeURIComponent(stack.runtime.url)}`);
      await expect
        .poll(() => page().locator('[data-testid=build-error]').textContent(), { timeout: 20_000 })
        .toMatch(
          /hotreload did not build: its sessions keep running the previous code\..*src\/app\.ts:\d+:\d+ \S.*Fix the file at that line and column, then save it/s,
        );
      // The position on its own, as an editor's "go to" takes it.
      expect(await page().locator('[data-testid=build-error-at]').first().textContent()).toMatch(
        /^src\/app\.ts:\d+:\d+$/,
      );
    }
    const fixed = await save(ORIGINAL.replace('answer.text', '`v4: ${answer.text}`'));
    expect(fixed.status).toBe('reloaded');
    expect(await ask()).toMatch(/^v4: /);
  });
});

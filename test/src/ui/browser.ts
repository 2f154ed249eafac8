/** Headless Debian Chromium through playwright-core (never a downloaded browser), plus screenshots. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const SCREENSHOT_DIR = join(REPO_ROOT, 'test-results', 'ui');
/** Debian's chromium package; CI installs it (`.ci/run`). */
export const CHROMIUM_PATH = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM_PATH);

/** The UI bundle is git-ignored build output: (re)builds it when a UI source is newer. */
export function buildUiIfStale(): void {
  execFileSync(process.execPath, [join(REPO_ROOT, 'collector', 'ui', 'build.mjs'), '--if-stale'], {
    timeout: 60_000,
  });
}

async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    timeout: 60_000,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * A 1440-wide light-scheme page (900 high unless told) with a 30 s default timeout (a busy machine is
 * slow to render), watched (watchPage) so that reportPageOnFailure can say what it did.
 */
async function openPage(browser: Browser, height = 900): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1440, height }, colorScheme: 'light' });
  page.setDefaultTimeout(30_000);
  watchers.set(page, watchPage(page));
  return page;
}

/** The watcher of each page openPage made. */
const watchers = new WeakMap<Page, ReturnType<typeof watchPage>>();

/**
 * For every test of the calling suite: when one fails, prints what the page (from openPage) showed
 * and did, and saves its screenshot (CI keeps no browser to look at).
 */
function reportPageOnFailure(label: string, page: () => Page | undefined): void {
  beforeEach(({ task, onTestFailed }) => {
    onTestFailed(async () => {
      const p = page();
      const watcher = p && watchers.get(p);
      if (watcher)
        console.error(`[${label}] ${task.name}: the page\n${await watcher.report(`${label}-${task.name}`)}`);
    });
  });
}

/** Waits for the page to show something (vitest's default of 1 s is too short on a busy machine). */
export function poll<T>(read: () => Promise<T>): ReturnType<typeof expect.poll<T>> {
  return expect.poll(read, { timeout: 30_000, interval: 100 });
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}

/**
 * Records what `page` does (its requests with status, console errors, page errors) so a failing
 * test can say what the page was doing; `report()` gives the last events, the URL and the text of
 * `<main>`, and saves a screenshot as `failed-<name>.png`.
 */
function watchPage(page: Page): { report: (name: string) => Promise<string> } {
  const events: string[] = [];
  const started = Date.now();
  const note = (event: string): void => {
    events.push(`${((Date.now() - started) / 1000).toFixed(2)} s ${event}`);
    if (events.length > 60) events.shift();
  };
  page.on('request', (r) => note(`→ ${r.method()} ${r.url()}`));
  page.on('response', (r) => note(`← ${r.status()} ${r.url()}`));
  page.on('requestfailed', (r) => note(`✗ ${r.url()}: ${r.failure()?.errorText ?? ''}`));
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') note(`console.${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => note(`page error: ${e.message}`));
  return {
    async report(name) {
      const main = await page
        .locator('main')
        .innerText({ timeout: 2000 })
        .catch((e: unknown) => `(unreadable: ${String(e)})`);
      await screenshot(page, `failed-${name.replace(/[^\w.-]+/g, '-').slice(0, 80)}`).catch(() => {});
      return [`url: ${page.url()}`, `main: ${main.slice(0, 1500)}`, 'events:', ...events].join('\n');
    },
  };
}

/**
 * The Chromium page of a test file (or of the describe it is called in): Chromium launched and a
 * page opened (openPage, `height` high) before its tests, after the hooks registered before this
 * call (call it below the beforeAll that starts what the page shows); closed after them; reported on
 * failure (reportPageOnFailure). Does nothing without Chromium or when told to `skip` (as the suite
 * is then). Read the page through the returned function.
 */
export function usePage(label: string, options: { height?: number; skip?: boolean } = {}): () => Page {
  let browser: Browser | undefined;
  let page: Page | undefined;
  beforeAll(async () => {
    if (!hasChromium || options.skip) return;
    // Generous: on a busy 2-core machine the first Chromium start alone can take many seconds.
    browser = await launchBrowser();
    page = await openPage(browser, options.height);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });
  reportPageOnFailure(label, () => page);
  return () => {
    if (!page) throw new Error(`${label}: no page (Chromium missing, or its launch failed)`);
    return page;
  };
}

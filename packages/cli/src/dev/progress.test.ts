import { describe, expect, it } from 'vitest';
import { createProgress } from './progress.js';

describe('createProgress', () => {
  it('prints plain lines when not on a terminal', () => {
    let out = '';
    let now = 1_000;
    const progress = createProgress({ write: (t) => (out += t), interactive: false, now: () => now });
    const step = progress.step('collector');
    now += 1_500;
    step.done('http://127.0.0.1:4318');
    progress.step('runtime').fail();
    expect(out).toBe('… collector\n✔ collector http://127.0.0.1:4318 (1.5s)\n… runtime\n✖ runtime (0.0s)\n');
    expect(out).not.toContain('\x1b');
  });

  it('animates a spinner on a terminal and replaces it with the result', async () => {
    let out = '';
    const progress = createProgress({ write: (t) => (out += t), interactive: true, frameMs: 5 });
    const step = progress.step('collector');
    await expect.poll(() => out.split('\r\x1b[2K').length, { timeout: 5_000 }).toBeGreaterThan(3);
    step.done('ready');
    step.done('twice'); // ending twice prints once
    expect(
      out.endsWith('\r\x1b[2K✔ collector ready (0.0s)\n') || /✔ collector ready \(\d\.\ds\)\n$/.test(out),
    ).toBe(true);
    expect(out).not.toContain('twice');
    const length = out.length;
    await new Promise((r) => setTimeout(r, 30));
    expect(out.length).toBe(length); // the spinner stopped
  });
});

describe('createProgress with overlapping steps', () => {
  it('names every running step on the spinner line and prints each result as it ends', () => {
    let out = '';
    const progress = createProgress({ write: (t) => (out += t), interactive: true, frameMs: 10_000 });
    const weather = progress.step('weather service');
    const runtime = progress.step('hosting runtime');
    expect(out.split('\r\x1b[2K').at(-1)).toMatch(/^⠋ weather service, hosting runtime 0\.\ds$/);
    runtime.done('http://127.0.0.1:8787');
    const screens = out.split('\r\x1b[2K');
    expect(screens.at(-2)).toMatch(/^✔ hosting runtime http:\/\/127\.0\.0\.1:8787 \(0\.\ds\)\n$/);
    expect(screens.at(-1)).toMatch(/^⠋ weather service 0\.\ds$/);
    weather.fail();
    expect(out).toMatch(/✖ weather service \(0\.\ds\)\n$/);
  });
});

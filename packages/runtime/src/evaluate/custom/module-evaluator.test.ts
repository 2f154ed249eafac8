import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SessionView } from '../session-spans.js';
import { runModuleEvaluator } from './module-evaluator.js';

const dir = mkdtempSync(join(tmpdir(), 'agentrt-module-evaluator-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const session = { toolCalls: [] } as unknown as SessionView;

function module(name: string, source: string): string {
  writeFileSync(join(dir, name), source);
  return join(dir, name);
}

describe('a custom evaluator module’s deadline', () => {
  it('counts from the moment the module is loaded: a slow import is not a timeout', async () => {
    const slowLoad = module(
      'slow-load.mjs',
      'await new Promise((r) => setTimeout(r, 1500));\nexport default () => ({ value: 1 });\n',
    );
    expect(await runModuleEvaluator(slowLoad, session, 1000)).toMatchObject({ value: 1 });
  });

  it('stops a call that does not answer within it', async () => {
    const hangs = module('hangs.mjs', 'export default () => { for (;;) {} };\n');
    const started = Date.now();
    expect(await runModuleEvaluator(hangs, session, 300)).toEqual({
      errorCode: 'EvaluatorTimeout',
      errorMessage: 'no answer within 300 ms',
    });
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

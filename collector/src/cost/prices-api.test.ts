import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startCollector, tempDir } from '../testing.test-util.js';

describe('GET /api/prices', () => {
  const tmp = tempDir('agentrt-prices-');
  afterAll(() => tmp.remove());

  it('serves the default prices, or AGENTRT_PRICES_FILE over them; a wrong file stops the start', async () => {
    const plain = await startCollector();
    try {
      const body = (await (await fetch(`${plain.url}/api/prices`)).json()) as {
        prices: Record<string, unknown>;
      };
      expect(body.prices['gpt-4o']).toEqual({ inputPerMTok: 2.5, outputPerMTok: 10 });
    } finally {
      await plain.cleanup();
    }
    const file = join(tmp.dir, 'prices.json');
    writeFileSync(file, JSON.stringify({ 'agentrt-offline': { inputPerMTok: 1, outputPerMTok: 2 } }));
    const priced = await startCollector({ pricesFile: file });
    try {
      const body = (await (await fetch(`${priced.url}/api/prices`)).json()) as {
        prices: Record<string, unknown>;
      };
      expect(body.prices['agentrt-offline']).toEqual({ inputPerMTok: 1, outputPerMTok: 2 });
      expect(body.prices['nova-pro']).toBeDefined();
    } finally {
      await priced.cleanup();
    }
    writeFileSync(file, '{"x": 1}');
    await expect(startCollector({ pricesFile: file })).rejects.toThrow(/prices.json: "x" needs inputPerMTok/);
  });
});

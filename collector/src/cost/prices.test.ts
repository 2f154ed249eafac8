import { describe, expect, it } from 'vitest';
import { costOf, costOfUsage, formatUsd, priceOf } from './prices.js';

describe('model prices', () => {
  it('matches Bedrock and OpenAI ids by their longest known key', () => {
    expect(priceOf('us.anthropic.claude-3-5-sonnet-20241022-v2:0')).toEqual({
      inputPerMTok: 3,
      outputPerMTok: 15,
    });
    expect(priceOf('us.amazon.nova-lite-v1:0')?.inputPerMTok).toBe(0.06);
    expect(priceOf('gpt-4o-mini-2024-07-18')?.inputPerMTok).toBe(0.15); // not gpt-4o's
    expect(priceOf('offline-weather-model')).toBeUndefined();
  });
  it('prices tokens and formats dollars', () => {
    expect(costOf('gpt-4o', 1_000_000, 100_000)).toBeCloseTo(3.5, 9);
    expect(costOf('unknown', 10, 10)).toBeUndefined();
    expect(formatUsd(3.5)).toBe('$3.50');
    expect(formatUsd(0.000123)).toBe('$0.00012');
    expect(formatUsd(undefined)).toBe('—');
  });
  it('costs usage per model, naming the models without a price', () => {
    const cost = costOfUsage({
      'gpt-4o': { input: 1_000_000, output: 100_000 },
      'claude-3-5-sonnet': { input: 1000, output: 1000 },
      'offline-model': { input: 5, output: 5 },
      '': { input: 1, output: 0 },
    });
    expect(cost?.usd).toBeCloseTo(3.5 + 0.003 + 0.015, 9);
    expect(cost?.unpriced).toEqual(['offline-model', '']);
    expect(costOfUsage({})).toBeUndefined();
    expect(costOfUsage(undefined)).toBeUndefined();
  });
});

describe('price file', () => {
  it('overrides and extends the defaults; names a wrong entry', async () => {
    const { parsePriceFile } = await import('./prices.js');
    const prices = parsePriceFile(
      '{"gpt-4o": {"inputPerMTok": 1, "outputPerMTok": 2}, "my-model": {"inputPerMTok": 5, "outputPerMTok": 5}}',
      'p.json',
    );
    expect(priceOf('gpt-4o-2024', prices)).toEqual({ inputPerMTok: 1, outputPerMTok: 2 });
    expect(priceOf('org/My-Model-v2', prices)?.inputPerMTok).toBe(5);
    expect(priceOf('nova-lite', prices)?.inputPerMTok).toBe(0.06);
    expect(() => parsePriceFile('{"x": {"inputPerMTok": -1}}', 'p.json')).toThrow(
      /p.json: "x" needs inputPerMTok/,
    );
    expect(() => parsePriceFile('[', 'p.json')).toThrow(/p.json: not JSON/);
  });
});

describe('prices of the models the examples use', () => {
  it('prices the offline model (nominally, saying so) and the Bedrock and OpenAI defaults', () => {
    // examples/models: OFFLINE_MODEL_ID, DEFAULT_BEDROCK_MODEL_ID, DEFAULT_OPENAI_MODEL_ID
    expect(priceOf('agentrt-offline-weather-1')?.note).toMatch(/^nominal price/);
    expect(priceOf('global.anthropic.claude-sonnet-4-6')).toEqual({ inputPerMTok: 3, outputPerMTok: 15 });
    expect(priceOf('gpt-5.4')).toEqual({ inputPerMTok: 1.25, outputPerMTok: 10 });
    expect(priceOf('gpt-5-mini-2025-08-07')?.inputPerMTok).toBe(0.25);
    const cost = costOfUsage({ 'agentrt-offline-weather-1': { input: 1_000_000, output: 0 } });
    expect(cost).toMatchObject({ usd: 3, unpriced: [] });
    expect(cost?.notes).toEqual([expect.stringMatching(/offline demo model is free/)]);
  });
});

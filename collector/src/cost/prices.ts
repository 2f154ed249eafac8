/**
 * Default model prices (USD per million tokens, on-demand list prices) for the cost columns. A model
 * id matches the longest key it contains, so `us.anthropic.claude-3-5-sonnet-20241022-v2:0` and
 * `claude-3-5-sonnet` price alike; an unknown model costs nothing (and says so).
 */
export interface Price {
  inputPerMTok: number;
  outputPerMTok: number;
  /** Said wherever the price is used, when it is not a provider's list price. */
  note?: string;
}

/**
 * The offline model (examples/models, `agentrt-offline-…`) costs nothing; it gets a made-up price
 * (Claude Sonnet's) so the demo's cost columns show what a real model would cost, labelled as such.
 */
export const OFFLINE_MODEL_PRICE: Price = {
  inputPerMTok: 3,
  outputPerMTok: 15,
  note: 'nominal price: the offline demo model is free; this is what Claude Sonnet would cost',
};

export const DEFAULT_PRICES: Readonly<Record<string, Price>> = {
  'claude-opus-4': { inputPerMTok: 15, outputPerMTok: 75 },
  'claude-sonnet-4': { inputPerMTok: 3, outputPerMTok: 15 },
  'claude-3-7-sonnet': { inputPerMTok: 3, outputPerMTok: 15 },
  'claude-3-5-sonnet': { inputPerMTok: 3, outputPerMTok: 15 },
  'claude-3-5-haiku': { inputPerMTok: 0.8, outputPerMTok: 4 },
  'claude-3-haiku': { inputPerMTok: 0.25, outputPerMTok: 1.25 },
  'nova-premier': { inputPerMTok: 2.5, outputPerMTok: 12.5 },
  'nova-pro': { inputPerMTok: 0.8, outputPerMTok: 3.2 },
  'nova-lite': { inputPerMTok: 0.06, outputPerMTok: 0.24 },
  'nova-micro': { inputPerMTok: 0.035, outputPerMTok: 0.14 },
  'llama3-3-70b': { inputPerMTok: 0.72, outputPerMTok: 0.72 },
  'gpt-4.1-mini': { inputPerMTok: 0.4, outputPerMTok: 1.6 },
  'gpt-4.1-nano': { inputPerMTok: 0.1, outputPerMTok: 0.4 },
  'gpt-4.1': { inputPerMTok: 2, outputPerMTok: 8 },
  'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 },
  'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10 },
  'o4-mini': { inputPerMTok: 1.1, outputPerMTok: 4.4 },
  'o3-mini': { inputPerMTok: 1.1, outputPerMTok: 4.4 },
  o3: { inputPerMTok: 2, outputPerMTok: 8 },
  // GPT-5's launch list prices, for the family (the OpenAI examples default to a gpt-5.x).
  'gpt-5-nano': { inputPerMTok: 0.05, outputPerMTok: 0.4 },
  'gpt-5-mini': { inputPerMTok: 0.25, outputPerMTok: 2 },
  'gpt-5': { inputPerMTok: 1.25, outputPerMTok: 10 },
  'agentrt-offline': OFFLINE_MODEL_PRICE,
};

/** The price of a model id, or undefined when no key matches. */
export function priceOf(
  model: string,
  prices: Readonly<Record<string, Price>> = DEFAULT_PRICES,
): Price | undefined {
  const id = model.toLowerCase();
  let best: string | undefined;
  for (const key of Object.keys(prices))
    if (id.includes(key) && (!best || key.length > best.length)) best = key;
  return best === undefined ? undefined : prices[best];
}

/** USD for the tokens, or undefined for a model without a price. */
export function costOf(
  model: string,
  input: number,
  output: number,
  prices: Readonly<Record<string, Price>> = DEFAULT_PRICES,
): number | undefined {
  const p = priceOf(model, prices);
  return p && (input * p.inputPerMTok + output * p.outputPerMTok) / 1e6;
}

/** The cost of usage per model: USD of the priced models, and the models without a price. */
export interface UsageCost {
  usd: number;
  /** The notes of the prices used (a nominal price says so). */
  notes: string[];
  /** Models with tokens and no price ('' = usage without a model name); their tokens cost nothing here. */
  unpriced: string[];
}

/**
 * Tokens × the price table, summed over models: the one cost function of spans, traces, sessions
 * and agents. Undefined when there is no usage at all.
 */
export function costOfUsage(
  byModel: Readonly<Record<string, { input: number; output: number }>> | undefined,
  prices: Readonly<Record<string, Price>> = DEFAULT_PRICES,
): UsageCost | undefined {
  const entries = Object.entries(byModel ?? {}).filter(([, t]) => t.input > 0 || t.output > 0);
  if (entries.length === 0) return undefined;
  const out: UsageCost = { usd: 0, unpriced: [], notes: [] };
  for (const [model, t] of entries) {
    const usd = costOf(model, t.input, t.output, prices);
    if (usd === undefined) out.unpriced.push(model);
    else out.usd += usd;
    const note = priceOf(model, prices)?.note;
    if (note && !out.notes.includes(note)) out.notes.push(note);
  }
  return out;
}

export function formatUsd(usd: number | undefined): string {
  if (usd === undefined) return '—';
  if (usd === 0) return '$0';
  return usd < 0.01 ? `$${usd.toPrecision(2)}` : `$${usd.toFixed(2)}`;
}

/**
 * Reads a price file (`{ "<model id part>": { "inputPerMTok": n, "outputPerMTok": n } }`) over the
 * defaults. Throws an Error naming the entry that is wrong.
 */
export function parsePriceFile(text: string, file: string): Record<string, Price> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`${file}: not JSON (${(error as Error).message})`, { cause: error });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error(`${file}: must be an object of model → { inputPerMTok, outputPerMTok }`);
  const out: Record<string, Price> = {};
  for (const [model, value] of Object.entries(parsed)) {
    const p = value as Partial<Price> | null;
    const ok = (n: unknown) => typeof n === 'number' && Number.isFinite(n) && n >= 0;
    if (!p || !ok(p.inputPerMTok) || !ok(p.outputPerMTok))
      throw new Error(
        `${file}: ${JSON.stringify(model)} needs inputPerMTok and outputPerMTok (USD per million tokens, >= 0)`,
      );
    out[model.toLowerCase()] = { inputPerMTok: p.inputPerMTok!, outputPerMTok: p.outputPerMTok! };
  }
  return { ...DEFAULT_PRICES, ...out };
}

/**
 * The "brain" of the offline deterministic model, kept free of any SDK types so that both the
 * Strands offline model and the OpenAI-compatible stub server run the same logic: read the
 * conversation, decide the next tool call from the tool results seen so far, and finally write a
 * summary from the forecast periods the weather API actually returned.
 */

import { isJudgePrompt, judgeAnswerText } from './judge-answer.js';

export const HTTP_REQUEST_TOOL = 'http_request';
export const READY_TO_SUMMARIZE_TOOL = 'ready_to_summarize';

/** One conversation entry, provider-neutral. */
export type PlanMessage =
  | { readonly role: 'user'; readonly text: string }
  | {
      readonly role: 'assistant';
      readonly text: string;
      readonly toolCalls: readonly { readonly id: string; readonly name: string; readonly input: unknown }[];
    }
  | {
      readonly role: 'tool';
      readonly toolCallId: string;
      readonly content: string;
      readonly isError: boolean;
    };

export interface PlanInput {
  readonly system: string;
  readonly messages: readonly PlanMessage[];
  readonly toolNames: readonly string[];
}

/** What the model says next: an optional preamble plus one tool call, or a final answer. */
export type PlanStep =
  | {
      readonly kind: 'tool';
      readonly preamble: string;
      readonly name: string;
      readonly input: Record<string, unknown>;
    }
  | { readonly kind: 'answer'; readonly text: string };

export const DEFAULT_PLANNER_BASE_URL = 'https://api.weather.gov';
const MAX_TOOL_CALLS = 8;
const MAX_PERIODS = 4;

/** A location the agent can look up. */
export type Location =
  | { readonly kind: 'point'; readonly lat: number; readonly lon: number; readonly label: string }
  | { readonly kind: 'zip'; readonly zip: string; readonly label: string };

// Coordinates a language model would know without asking; the offline model "knows" these cities.
const KNOWN_PLACES: Readonly<Record<string, readonly [number, number]>> = {
  seattle: [47.6062, -122.3321],
  'new york': [40.7128, -74.006],
  chicago: [41.8781, -87.6298],
  denver: [39.7392, -104.9903],
  miami: [25.7617, -80.1918],
  'san francisco': [37.7749, -122.4194],
  boston: [42.3601, -71.0589],
  austin: [30.2672, -97.7431],
  'los angeles': [34.0522, -118.2437],
  washington: [38.8951, -77.0364],
};

/** Finds coordinates, a ZIP code or a known US city in a prompt. */
export function findLocation(prompt: string): Location | undefined {
  const coords = /(-?\d{1,2}(?:\.\d+)?)\s*,\s*(-?\d{1,3}(?:\.\d+)?)/.exec(prompt);
  if (coords) {
    const lat = Number(coords[1]);
    const lon = Number(coords[2]);
    if (Math.abs(lat) <= 90 && Math.abs(lon) <= 180) {
      return { kind: 'point', lat, lon, label: `${round4(lat)},${round4(lon)}` };
    }
  }
  const zip = /\b(\d{5})(?:-\d{4})?\b/.exec(prompt);
  if (zip?.[1]) return { kind: 'zip', zip: zip[1], label: `ZIP code ${zip[1]}` };
  const lower = prompt.toLowerCase();
  for (const [name, [lat, lon]] of Object.entries(KNOWN_PLACES)) {
    if (lower.includes(name)) return { kind: 'point', lat, lon, label: titleCase(name) };
  }
  return undefined;
}

/** The first http(s) URL in the system prompt is the weather API the prompt tells the model to use. */
export function findBaseUrl(system: string): string {
  const match = /https?:\/\/[^\s/'"`)]+(?:\/[^\s'"`)]*)?/.exec(system);
  if (!match) return DEFAULT_PLANNER_BASE_URL;
  try {
    return new URL(match[0]).origin;
  } catch {
    return DEFAULT_PLANNER_BASE_URL;
  }
}

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

function titleCase(text: string): string {
  return text.replace(/\b\w/g, (c) => c.toUpperCase());
}

interface ToolExchange {
  readonly name: string;
  readonly input: unknown;
  readonly result: string;
  readonly isError: boolean;
}

/** The prompt of the current turn and the tool exchanges made since. */
function currentTurn(messages: readonly PlanMessage[]): { prompt: string; exchanges: ToolExchange[] } {
  let start = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === 'user') {
      start = i;
      break;
    }
  }
  const first = messages[start];
  const prompt = first?.role === 'user' ? first.text : '';
  const calls = new Map<string, { name: string; input: unknown }>();
  const exchanges: ToolExchange[] = [];
  for (const message of messages.slice(start + 1)) {
    if (message.role === 'assistant') {
      for (const call of message.toolCalls) calls.set(call.id, { name: call.name, input: call.input });
    } else if (message.role === 'tool') {
      const call = calls.get(message.toolCallId);
      exchanges.push({
        name: call?.name ?? 'unknown',
        input: call?.input,
        result: message.content,
        isError: message.isError,
      });
    }
  }
  return { prompt, exchanges };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The `body` of an http_request tool result, or the result itself when it is already the body. */
function responseBody(result: string): Record<string, unknown> | undefined {
  const parsed = parseJson(result);
  if (!isRecord(parsed)) return undefined;
  const body = 'body' in parsed ? parsed.body : parsed;
  return isRecord(body) ? body : undefined;
}

export interface ForecastPeriod {
  readonly name: string;
  readonly temperature: number | undefined;
  readonly temperatureUnit: string;
  readonly windSpeed: string;
  readonly windDirection: string;
  readonly shortForecast: string;
  readonly detailedForecast: string;
  readonly probabilityOfPrecipitation: number | undefined;
}

function readPeriods(body: Record<string, unknown>): ForecastPeriod[] | undefined {
  const properties = body.properties;
  if (!isRecord(properties) || !Array.isArray(properties.periods)) return undefined;
  return properties.periods.filter(isRecord).map((p) => {
    const pop = isRecord(p.probabilityOfPrecipitation) ? p.probabilityOfPrecipitation.value : undefined;
    return {
      name: String(p.name ?? 'Upcoming'),
      temperature: typeof p.temperature === 'number' ? p.temperature : undefined,
      temperatureUnit: String(p.temperatureUnit ?? 'F'),
      windSpeed: String(p.windSpeed ?? ''),
      windDirection: String(p.windDirection ?? ''),
      shortForecast: String(p.shortForecast ?? ''),
      detailedForecast: String(p.detailedForecast ?? ''),
      probabilityOfPrecipitation: typeof pop === 'number' ? pop : undefined,
    };
  });
}

function readPlace(body: Record<string, unknown>): string | undefined {
  const properties = body.properties;
  if (!isRecord(properties)) return undefined;
  const relative = properties.relativeLocation;
  const relProps = isRecord(relative) && isRecord(relative.properties) ? relative.properties : undefined;
  if (relProps && typeof relProps.city === 'string' && typeof relProps.state === 'string') {
    return `${relProps.city}, ${relProps.state}`;
  }
  return undefined;
}

/** Writes the readable forecast the user sees, from the periods the API returned. */
export function writeForecastSummary(place: string, periods: readonly ForecastPeriod[]): string {
  if (periods.length === 0) return `The weather service returned no forecast periods for ${place}.`;
  const lines = [`Here is the forecast for ${place}:`, ''];
  for (const period of periods.slice(0, MAX_PERIODS)) {
    const temp = period.temperature === undefined ? '' : ` ${period.temperature}°${period.temperatureUnit}.`;
    const wind = period.windSpeed
      ? ` Wind ${period.windDirection} ${period.windSpeed}.`.replace('  ', ' ')
      : '';
    const rain =
      period.probabilityOfPrecipitation === undefined
        ? ''
        : ` Chance of precipitation ${period.probabilityOfPrecipitation}%.`;
    lines.push(`- ${period.name}: ${period.shortForecast}.${temp}${wind}${rain}`);
  }
  const first = periods[0];
  if (first?.detailedForecast)
    lines.push('', `In detail, ${first.name.toLowerCase()}: ${first.detailedForecast}`);
  return lines.join('\n');
}

const GUIDANCE =
  'I am the offline weather assistant. Ask me about the weather at a US location, for example ' +
  '"What is the weather at 47.6062,-122.3321?", "Forecast for ZIP 98101" or "Weather in Seattle", ' +
  'and I will look it up with the national weather API and summarise the forecast.';

const NAME_GIVEN = /\bmy name is (\p{L}[\p{L}'-]*)/iu;
const NAME_ASKED = /\bwhat(?:'s| is) my name\b|\b(?:know|remember) my name\b|\bwho am i\b/i;

/**
 * The one thing besides the weather the offline model follows in a conversation: the user's name.
 * An answer when the prompt gives or asks for it (from the earlier turns it was given), else undefined.
 */
function recallName(prompt: string, messages: readonly PlanMessage[]): string | undefined {
  const given = NAME_GIVEN.exec(prompt)?.[1];
  if (given) return `Nice to meet you, ${given}! I will remember your name for the rest of this session.`;
  if (!NAME_ASKED.test(prompt)) return undefined;
  const earlier = messages
    .flatMap((m) => (m.role === 'user' ? [NAME_GIVEN.exec(m.text)?.[1]] : []))
    .filter((name) => name !== undefined);
  const name = earlier.at(-1);
  return name
    ? `Your name is ${name}: you told me earlier in this session.`
    : 'You have not told me your name in this session yet.';
}

/** Decides the next step of the conversation. Deterministic: the same conversation gives the same step. */
export function planNextStep(input: PlanInput): PlanStep {
  const { prompt, exchanges } = currentTurn(input.messages);
  if (isJudgePrompt(prompt)) return { kind: 'answer', text: judgeAnswerText(prompt) };
  const canSignalSummary = input.toolNames.includes(READY_TO_SUMMARIZE_TOOL);
  const readySignalled = exchanges.some((e) => e.name === READY_TO_SUMMARIZE_TOOL);
  // In the streaming pattern everything after ready_to_summarize is shown, so signal it first.
  const answer = (text: string): PlanStep =>
    canSignalSummary && !readySignalled
      ? { kind: 'tool', preamble: '', name: READY_TO_SUMMARIZE_TOOL, input: {} }
      : { kind: 'answer', text };

  const remembered = recallName(prompt, input.messages);
  if (remembered) return answer(remembered);
  const location = findLocation(prompt);
  if (!location) return answer(GUIDANCE);
  if (!input.toolNames.includes(HTTP_REQUEST_TOOL)) {
    return answer(`I cannot look up the forecast for ${location.label}: no HTTP request tool is available.`);
  }

  const httpExchanges = exchanges.filter((e) => e.name === HTTP_REQUEST_TOOL);
  const last = httpExchanges.at(-1);
  const base = findBaseUrl(input.system);
  if (!last) {
    const url =
      location.kind === 'point'
        ? `${base}/points/${round4(location.lat)},${round4(location.lon)}`
        : `${base}/zipcodes/${location.zip}`;
    return {
      kind: 'tool',
      preamble: `Let me find the forecast office and grid for ${location.label}.`,
      name: HTTP_REQUEST_TOOL,
      input: { method: 'GET', url },
    };
  }
  if (last.isError) {
    return answer(
      `I could not get the forecast for ${location.label}: ${last.result.replace(/^Error:\s*/, '')}`,
    );
  }
  if (exchanges.length >= MAX_TOOL_CALLS) {
    return answer(
      `I could not complete the forecast lookup for ${location.label} within ${MAX_TOOL_CALLS} steps.`,
    );
  }
  const body = responseBody(last.result);
  if (!body)
    return answer(`The weather service answered for ${location.label}, but not with JSON I can read.`);
  const periods = readPeriods(body);
  if (periods) {
    const pointsBody = httpExchanges.length > 1 ? responseBody(httpExchanges[0]?.result ?? '') : undefined;
    const place = (pointsBody && readPlace(pointsBody)) ?? location.label;
    return answer(writeForecastSummary(place, periods));
  }
  const properties = body.properties;
  if (isRecord(properties) && typeof properties.forecast === 'string') {
    const place = readPlace(body) ?? location.label;
    return {
      kind: 'tool',
      preamble: `The grid point is near ${place}; now fetching its forecast.`,
      name: HTTP_REQUEST_TOOL,
      input: { method: 'GET', url: properties.forecast },
    };
  }
  const detail =
    typeof body.detail === 'string' ? body.detail : 'the response had neither a forecast URL nor periods';
  return answer(`I could not get the forecast for ${location.label}: ${detail}`);
}

/** A rough token count (about four characters a token), used for the offline model's usage numbers. */
export function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/** Splits text into stream chunks at word boundaries, keeping every character. */
export function splitIntoChunks(text: string, wordsPerChunk = 4): string[] {
  const pieces = text.match(/\S+\s*|\s+/g) ?? [];
  const chunks: string[] = [];
  for (let i = 0; i < pieces.length; i += wordsPerChunk)
    chunks.push(pieces.slice(i, i + wordsPerChunk).join(''));
  return chunks;
}

/**
 * The weather agent as an AG-UI server (the runtime's AGUI protocol): `POST /invocations` takes an
 * AG-UI RunAgentInput and answers with AG-UI events as server-sent events, encoded by the official
 * @ag-ui/encoder — RUN_STARTED, TEXT_MESSAGE_START, a TEXT_MESSAGE_CONTENT per chunk of the answer
 * as the model streams it, TEXT_MESSAGE_END, RUN_FINISHED; a failure is one RUN_ERROR event
 * (AG-UI contract: VALIDATION_ERROR with 400 for a bad input, AGENT_ERROR mid-stream). `GET /ping`
 * answers the health check.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { type BaseEvent, EventType } from '@ag-ui/core';
import { EventEncoder } from '@ag-ui/encoder';
import { HttpError, readJson } from '@agentrt/kit';
import {
  type Logger,
  type ModelSelection,
  type WeatherApiConfig,
  streamWeatherSummary,
} from '@agentrt/example-models';

export interface AguiAgentOptions {
  readonly model: ModelSelection;
  readonly weatherApi: WeatherApiConfig;
  readonly captureContent: boolean;
  readonly logger: Logger;
  /** Largest request body (default 1 MiB). */
  readonly maxBodyBytes?: number;
}

/** What this agent reads of a RunAgentInput: the run's ids and the last user message's text. */
export interface RunRequest {
  threadId: string;
  runId: string;
  prompt: string;
}

/** A RunAgentInput that cannot be run: the AG-UI VALIDATION_ERROR, naming the field. */
export class ValidationError extends Error {
  override name = 'ValidationError';
}

const SESSION_HEADER = 'x-amzn-bedrock-agentcore-runtime-session-id';

/** The thread, run and prompt of a RunAgentInput; ValidationError naming the field that is wrong. */
export function readRunInput(body: unknown): RunRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ValidationError('the body must be an AG-UI RunAgentInput object');
  const input = body as Record<string, unknown>;
  for (const field of ['threadId', 'runId'] as const)
    if (typeof input[field] !== 'string' || input[field] === '')
      throw new ValidationError(`${field} must be a non-empty string`);
  if (!Array.isArray(input.messages)) throw new ValidationError('messages must be an array');
  const last = [...(input.messages as unknown[])]
    .reverse()
    .find((m) => typeof m === 'object' && m !== null && (m as { role?: unknown }).role === 'user') as
    { content?: unknown } | undefined;
  if (!last) throw new ValidationError('messages must hold a message with role "user"');
  if (typeof last.content !== 'string' || last.content.trim() === '')
    throw new ValidationError("the last user message's content must be non-empty text");
  return { threadId: input.threadId as string, runId: input.runId as string, prompt: last.content };
}

/** Runs the agent on the request, sending each AG-UI event as it comes. */
async function run(req: IncomingMessage, res: ServerResponse, options: AguiAgentOptions): Promise<void> {
  const encoder = new EventEncoder({ accept: req.headers.accept ?? 'text/event-stream' });
  const send = (event: BaseEvent): boolean => res.write(encoder.encode(event));
  let request: RunRequest;
  try {
    request = readRunInput(await readJson(req, options.maxBodyBytes ?? 1 << 20));
  } catch (error) {
    // an oversized or malformed body (the kit's HttpError) is a VALIDATION_ERROR too
    if (!(error instanceof ValidationError || error instanceof HttpError)) throw error;
    res.writeHead(400, { 'content-type': encoder.getContentType() });
    send({ type: EventType.RUN_ERROR, code: 'VALIDATION_ERROR', message: error.message } as BaseEvent);
    res.end();
    return;
  }
  const { threadId, runId, prompt } = request;
  const sessionId = req.headers[SESSION_HEADER] as string | undefined;
  const controller = new AbortController();
  res.once('close', () => controller.abort());
  res.writeHead(200, { 'content-type': encoder.getContentType(), 'cache-control': 'no-cache' });
  send({ type: EventType.RUN_STARTED, threadId, runId } as BaseEvent);
  const messageId = randomUUID();
  send({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' } as BaseEvent);
  try {
    const chunks = streamWeatherSummary(prompt, {
      model: options.model,
      weatherApi: options.weatherApi,
      captureContent: options.captureContent,
      agentName: 'agui_agent',
      signal: controller.signal,
      ...(sessionId ? { sessionId } : {}),
    });
    for (let step = await chunks.next(); !step.done; step = await chunks.next())
      if (step.value)
        send({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: step.value } as BaseEvent);
    send({ type: EventType.TEXT_MESSAGE_END, messageId } as BaseEvent);
    send({ type: EventType.RUN_FINISHED, threadId, runId } as BaseEvent);
  } catch (error) {
    options.logger.warn('run failed', { error: (error as Error).message });
    send({ type: EventType.RUN_ERROR, code: 'AGENT_ERROR', message: (error as Error).message } as BaseEvent);
  }
  res.end();
}

/** The agent's HTTP server (not listening yet). */
export function createAguiAgentServer(options: AguiAgentOptions): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/ping' && (req.method === 'GET' || req.method === 'HEAD')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"Healthy"}');
      return;
    }
    if (path !== '/invocations') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"not found"}');
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST', 'content-type': 'application/json' });
      res.end('{"message":"POST /invocations with an AG-UI RunAgentInput"}');
      return;
    }
    run(req, res, options).catch((error: unknown) => {
      options.logger.error('invocation failed', { error: (error as Error).message });
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end();
    });
  });
}

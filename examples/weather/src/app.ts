import { once } from 'node:events';
import {
  type AgentAnswer,
  type Logger,
  type ModelSelection,
  type WeatherApiConfig,
  HttpError,
  accessLog,
  askWeatherAgent,
  detailErrors,
  readJsonBody,
  requireObject,
  routeNotFound,
  streamWeatherSummary,
} from '@agentrt/example-models';
import { agentContext, getAgentContextState, setRoute } from '@agentrt/server';
import Koa, { type Context } from 'koa';
import { apiKeyAuth } from './auth.js';

export interface WeatherAppOptions {
  readonly model: ModelSelection;
  readonly weatherApi: WeatherApiConfig;
  readonly captureContent: boolean;
  readonly logger: Logger;
  /** Keys accepted on the weather endpoints; empty means no authentication. */
  readonly apiKeys?: readonly string[];
  readonly maxBodyBytes?: number;
}

/** The Koa app plus what graceful shutdown needs. */
export interface WeatherApp {
  readonly koa: Koa;
  /** Requests being served right now. */
  readonly inFlight: number;
  /** Resolves when no request is in flight. */
  whenIdle(): Promise<void>;
  /** Stops every in-flight agent run (their clients get an incomplete response). */
  abortInFlight(reason: Error): void;
}

const ROUTES: Readonly<Record<string, readonly string[]>> = {
  '/weather': ['POST'],
  '/weather-streaming': ['POST'],
  '/health': ['GET', 'HEAD'],
};

/** The prompt of a weather request, or a 400 with the seed's detail. */
async function readPrompt(ctx: Context, maxBodyBytes: number): Promise<string> {
  const body = requireObject((await readJsonBody(ctx, maxBodyBytes)) ?? {}, 'with a "prompt" string');
  const prompt = body.prompt;
  if (prompt === undefined || prompt === null || prompt === '')
    throw new HttpError(400, 'No prompt provided');
  if (typeof prompt !== 'string')
    throw new HttpError(
      400,
      `prompt must be a string, got ${Array.isArray(prompt) ? 'array' : typeof prompt}`,
    );
  if (prompt.trim() === '') throw new HttpError(400, 'No prompt provided');
  return prompt;
}

function answerHeaders(ctx: Context, model: ModelSelection, answer?: AgentAnswer): void {
  ctx.set('X-Model-Provider', model.provider);
  ctx.set('X-Model-Id', model.modelId);
  ctx.set('X-Model-Offline', String(model.offline));
  if (answer) {
    ctx.set('X-Usage-Input-Tokens', String(answer.metadata.usage.inputTokens));
    ctx.set('X-Usage-Output-Tokens', String(answer.metadata.usage.outputTokens));
  }
}

/**
 * The weather service of the seed (section 4.4): `POST /weather` answers the agent's final text,
 * `POST /weather-streaming` streams only the summary as text/plain increments, `GET /health`.
 * Each request builds a fresh agent. Runs under `agentContext()`, so trace and session headers
 * reach the agent's spans.
 */
export function createWeatherApp(options: WeatherAppOptions): WeatherApp {
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  const log = options.logger;
  const controllers = new Set<AbortController>();
  let idleWaiters: (() => void)[] = [];

  // The session id agentContext() found; passed explicitly so it reaches spans and logs even
  // when no OpenTelemetry context manager is registered (no SDK loaded).
  const sessionOf = (ctx: Context) => getAgentContextState(ctx)?.sessionId;
  const runOptions = (ctx: Context, signal: AbortSignal) => {
    const sessionId = sessionOf(ctx);
    return {
      model: options.model,
      weatherApi: options.weatherApi,
      captureContent: options.captureContent,
      signal,
      ...(sessionId ? { sessionId } : {}),
    };
  };
  const logFor = (ctx: Context) => {
    const sessionId = sessionOf(ctx);
    return sessionId ? log.child({ sessionId }) : log;
  };

  /** Tracks one request: an abort signal that fires when the client leaves or on forced shutdown. */
  const track = async (ctx: Context, handler: (signal: AbortSignal) => Promise<void>): Promise<void> => {
    const controller = new AbortController();
    const onClose = () => {
      if (!ctx.res.writableFinished) controller.abort(new Error('client disconnected'));
    };
    ctx.res.once('close', onClose);
    controllers.add(controller);
    try {
      await handler(controller.signal);
    } finally {
      ctx.res.off('close', onClose);
      controllers.delete(controller);
      if (controllers.size === 0) {
        const waiters = idleWaiters;
        idleWaiters = [];
        for (const resolve of waiters) resolve();
      }
    }
  };

  const weather = (ctx: Context) =>
    track(ctx, async (signal) => {
      const prompt = await readPrompt(ctx, maxBodyBytes);
      const answer = await askWeatherAgent(prompt, runOptions(ctx, signal));
      logFor(ctx).info('answered', {
        provider: answer.metadata.provider,
        offline: answer.metadata.offline,
        usage: answer.metadata.usage,
      });
      answerHeaders(ctx, options.model, answer);
      ctx.type = 'text/plain; charset=utf-8';
      ctx.body = answer.text;
    });

  const weatherStreaming = (ctx: Context) =>
    track(ctx, async (signal) => {
      const prompt = await readPrompt(ctx, maxBodyBytes);
      const summary = streamWeatherSummary(prompt, runOptions(ctx, signal));
      try {
        // Wait for the first chunk before committing to 200, so a failure before any text is a 500.
        let step = await summary.next();
        answerHeaders(ctx, options.model);
        ctx.status = 200;
        ctx.respond = false;
        const res = ctx.res;
        res.writeHead(200, {
          ...(res.getHeaders() as Record<string, string>),
          'content-type': 'text/plain; charset=utf-8',
          'cache-control': 'no-cache',
          'x-content-type-options': 'nosniff',
          'x-accel-buffering': 'no',
        });
        while (!step.done) {
          if (!res.write(step.value)) await once(res, 'drain', { signal });
          step = await summary.next();
        }
        logFor(ctx).info('streamed', {
          provider: step.value.metadata.provider,
          offline: step.value.metadata.offline,
          usage: step.value.metadata.usage,
        });
        res.end();
      } finally {
        await summary.return(undefined as never);
      }
    });

  const koa = new Koa();
  koa.on('error', (error: unknown) => log.debug('koa error', { error: String(error) }));
  koa.use(accessLog(log, ['/health']));
  koa.use(agentContext());
  koa.use(detailErrors(log));
  koa.use(async (ctx, next) => {
    ctx.set('X-Worker-Pid', String(process.pid));
    await next();
  });
  koa.use(apiKeyAuth(options.apiKeys ?? [], ['/weather', '/weather-streaming']));
  koa.use(async (ctx) => {
    // Named routes: the server span reads `POST /weather`, not `POST`.
    if (ctx.method === 'POST' && ctx.path === '/weather') {
      setRoute(ctx, '/weather');
      return weather(ctx);
    }
    if (ctx.method === 'POST' && ctx.path === '/weather-streaming') {
      setRoute(ctx, '/weather-streaming');
      return weatherStreaming(ctx);
    }
    if ((ctx.method === 'GET' || ctx.method === 'HEAD') && ctx.path === '/health') {
      setRoute(ctx, '/health');
      ctx.body = { status: 'healthy', pid: process.pid, inFlight: controllers.size };
      return;
    }
    routeNotFound(ctx, ROUTES);
  });

  return {
    koa,
    get inFlight() {
      return controllers.size;
    },
    whenIdle: () =>
      controllers.size === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve)),
    abortInFlight: (reason) => {
      for (const controller of controllers) controller.abort(reason);
    },
  };
}

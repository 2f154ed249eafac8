import {
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
} from '@agentrt/example-models';
import { agentContext, getAgentContextState } from '@agentrt/server';
import Koa, { type Context } from 'koa';

/** The constant `model` label of every answer. */
export const MODEL_LABEL = 'strands-agent';

export const PROMPT_REQUIRED = 'No prompt found in input. Please provide a "prompt" key in the input.';

export interface CustomAgentOptions {
  readonly model: ModelSelection;
  readonly weatherApi: WeatherApiConfig;
  readonly captureContent: boolean;
  readonly logger: Logger;
  /** Largest request body (default 1 MiB). */
  readonly maxBodyBytes?: number;
}

/** The response of `POST /invocations` (seed section 2.3, custom implementation). */
export interface InvocationResponse {
  readonly output: {
    readonly message: { readonly role: 'assistant'; readonly content: readonly { readonly text: string }[] };
    readonly timestamp: string;
    readonly model: string;
  };
}

const ROUTES: Readonly<Record<string, readonly string[]>> = {
  '/invocations': ['POST'],
  '/ping': ['GET', 'HEAD'],
};

function readPrompt(body: unknown): string {
  const input = requireObject(body ?? {}, 'like {"input": {"prompt": "..."}}').input;
  if (input === undefined || input === null) throw new HttpError(400, PROMPT_REQUIRED);
  if (typeof input !== 'object' || Array.isArray(input)) {
    throw new HttpError(
      400,
      `input must be an object with a "prompt" key, got ${Array.isArray(input) ? 'array' : typeof input}`,
    );
  }
  const prompt = (input as Record<string, unknown>).prompt;
  if (prompt === undefined || prompt === null) throw new HttpError(400, PROMPT_REQUIRED);
  if (typeof prompt !== 'string')
    throw new HttpError(400, `input.prompt must be a string, got ${typeof prompt}`);
  if (prompt.trim() === '') throw new HttpError(400, PROMPT_REQUIRED);
  return prompt;
}

/**
 * The custom implementation of the container contract on plain Koa, with only `agentContext()`
 * from agentrt: `POST /invocations` `{"input": {"prompt": ...}}` → `{"output": {...}}`, and
 * `GET /ping` (HealthyBusy while an invocation runs).
 */
export function createCustomAgentApp(options: CustomAgentOptions): Koa {
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  const log = options.logger;
  let inFlight = 0;
  let status: 'Healthy' | 'HealthyBusy' = 'Healthy';
  let lastUpdateSeconds = Math.floor(Date.now() / 1000);
  const setStatus = () => {
    const next = inFlight > 0 ? 'HealthyBusy' : 'Healthy';
    if (next !== status) {
      status = next;
      lastUpdateSeconds = Math.floor(Date.now() / 1000);
    }
  };

  const invoke = async (ctx: Context) => {
    const prompt = readPrompt(await readJsonBody(ctx, maxBodyBytes));
    const controller = new AbortController();
    const onClose = () => {
      if (!ctx.res.writableFinished) controller.abort(new Error('client disconnected'));
    };
    ctx.res.once('close', onClose);
    inFlight++;
    setStatus();
    try {
      const sessionId = getAgentContextState(ctx)?.sessionId;
      const answer = await askWeatherAgent(prompt, {
        model: options.model,
        weatherApi: options.weatherApi,
        captureContent: options.captureContent,
        agentName: 'custom_agent',
        signal: controller.signal,
        ...(sessionId ? { sessionId } : {}),
      });
      (sessionId ? log.child({ sessionId }) : log).info('answered', {
        provider: answer.metadata.provider,
        offline: answer.metadata.offline,
        usage: answer.metadata.usage,
      });
      const body: InvocationResponse = {
        output: {
          message: { role: 'assistant', content: [{ text: answer.text }] },
          timestamp: new Date().toISOString(),
          model: MODEL_LABEL,
        },
      };
      ctx.set('X-Model-Provider', answer.metadata.provider);
      ctx.set('X-Model-Offline', String(answer.metadata.offline));
      ctx.body = body;
    } finally {
      ctx.res.off('close', onClose);
      inFlight--;
      setStatus();
    }
  };

  const koa = new Koa();
  koa.on('error', (error: unknown) => log.debug('koa error', { error: String(error) }));
  koa.use(accessLog(log, ['/ping']));
  koa.use(agentContext());
  koa.use(detailErrors(log, 'Agent processing failed: '));
  koa.use(async (ctx) => {
    if (ctx.method === 'POST' && ctx.path === '/invocations') return invoke(ctx);
    if ((ctx.method === 'GET' || ctx.method === 'HEAD') && ctx.path === '/ping') {
      ctx.body = { status, time_of_last_update: lastUpdateSeconds };
      return;
    }
    routeNotFound(ctx, ROUTES);
  });
  return koa;
}

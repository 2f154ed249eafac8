import { type InvokableTool, type ToolContext, tool } from '@strands-agents/sdk';
import { z } from 'zod';
import { traceToolCall } from './genai-telemetry.js';
import { HTTP_REQUEST_TOOL, READY_TO_SUMMARIZE_TOOL } from './offline/planner.js';

export interface HttpRequestToolOptions {
  /** The weather API origin; requests elsewhere are refused, so a prompt cannot turn the agent into a proxy. */
  readonly baseUrl: string;
  /** Sent on every request: api.weather.gov answers 403 without one. */
  readonly userAgent: string;
  readonly timeoutMs: number;
  /** Largest response body read, in bytes (default 1 MiB). */
  readonly maxResponseBytes?: number;
}

/** The JSON an http_request call hands back to the model. */
export interface HttpToolResult {
  readonly status: number;
  readonly url: string;
  readonly contentType: string;
  readonly body: unknown;
}

/** Failure of an outbound tool request; the message is what the model reads. */
export class ToolRequestError extends Error {
  override readonly name = 'ToolRequestError';
  constructor(
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const HttpInput = z.object({
  url: z
    .string()
    .describe('Absolute URL on the weather API, e.g. https://api.weather.gov/points/47.6062,-122.3321'),
  method: z.enum(['GET', 'HEAD']).optional().describe('HTTP method (default GET)'),
});

/**
 * The abort signal of one request: fires after `timeoutMs` or when the agent is cancelled, whichever
 * is first, and covers the body as well as the headers. `release()` when the request is done.
 * Unlike `AbortSignal.any([AbortSignal.timeout(ms), cancel])`, nothing outlives the request: Node
 * keeps such a composite signal (and, through fetch's abort listener, the response and everything
 * it reaches) alive until the timeout fires, which held every request's objects for the whole
 * timeout (15 s by default) and grew the heap of a busy agent by megabytes a second.
 */
function requestDeadline(
  timeoutMs: number,
  cancel: AbortSignal | undefined,
): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError')),
    timeoutMs,
  );
  const onCancel = () => controller.abort(cancel?.reason);
  if (cancel?.aborted) onCancel();
  else cancel?.addEventListener('abort', onCancel, { once: true });
  return {
    signal: controller.signal,
    release() {
      clearTimeout(timer);
      cancel?.removeEventListener('abort', onCancel);
    },
  };
}

async function readLimited(response: Response, maxBytes: number): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new ToolRequestError(`response from ${response.url} is larger than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The HTTP-request tool of the weather pattern: GET a URL on the national weather API and return
 * its status and JSON body. Adds the User-Agent the API requires and refuses any other origin.
 */
export function createHttpRequestTool(
  options: HttpRequestToolOptions,
): InvokableTool<z.infer<typeof HttpInput>, HttpToolResult> {
  const origin = new URL(options.baseUrl).origin;
  const maxBytes = options.maxResponseBytes ?? 1024 * 1024;
  const description =
    `Make an HTTP GET request to the national weather API at ${origin} and return the status and JSON body. ` +
    'Use it for the points lookup and then for the forecast URL the points lookup returns.';
  return tool({
    name: HTTP_REQUEST_TOOL,
    description,
    inputSchema: HttpInput,
    callback: (input, toolContext?: ToolContext) =>
      traceToolCall(
        { name: HTTP_REQUEST_TOOL, description, callId: toolContext?.toolUse.toolUseId, input },
        async (): Promise<HttpToolResult> => {
          let url: URL;
          try {
            url = new URL(input.url);
          } catch (error) {
            throw new ToolRequestError(`url ${JSON.stringify(input.url)} is not an absolute URL`, undefined, {
              cause: error,
            });
          }
          if (url.origin !== origin) {
            throw new ToolRequestError(`url must be on ${origin}; refusing ${url.origin}`);
          }
          const deadline = requestDeadline(options.timeoutMs, toolContext?.agent.cancelSignal);
          let response: Response;
          let text: string;
          try {
            response = await fetch(url, {
              method: input.method ?? 'GET',
              headers: { 'user-agent': options.userAgent, accept: 'application/geo+json, application/json' },
              signal: deadline.signal,
              redirect: 'follow',
            });
            text = await readLimited(response, maxBytes);
          } catch (error) {
            if (error instanceof ToolRequestError) throw error;
            const reason = error instanceof Error ? error.message : String(error);
            throw new ToolRequestError(`request to ${url.href} failed: ${reason}`, undefined, {
              cause: error,
            });
          } finally {
            deadline.release();
          }
          const contentType = response.headers.get('content-type') ?? '';
          let body: unknown = text;
          if (/json/i.test(contentType) || /^\s*[[{]/.test(text)) {
            try {
              body = JSON.parse(text);
            } catch {
              body = text; // not JSON after all: hand the model the raw text
            }
          }
          if (!response.ok) {
            const detail =
              typeof body === 'object' && body !== null && 'detail' in body
                ? String(body.detail)
                : text.slice(0, 200);
            throw new ToolRequestError(
              `HTTP ${response.status} from ${url.href}: ${detail}`,
              response.status,
            );
          }
          return { status: response.status, url: response.url || url.href, contentType, body };
        },
      ),
  });
}

/**
 * The streaming boundary of the weather pattern: the model calls it once it has all the data,
 * and everything it says afterwards is the summary the client sees.
 */
export function createReadyToSummarizeTool(
  onReady: () => void,
): InvokableTool<Record<string, never>, string> {
  const description =
    'Call this once, with no arguments, after all data has been fetched and before writing the final summary.';
  return tool({
    name: READY_TO_SUMMARIZE_TOOL,
    description,
    inputSchema: z.object({}),
    callback: (input, toolContext?: ToolContext) =>
      traceToolCall(
        { name: READY_TO_SUMMARIZE_TOOL, description, callId: toolContext?.toolUse.toolUseId, input },
        async () => {
          onReady();
          return 'Ok - continue providing the summary!';
        },
      ),
  });
}

import { type IncomingMessage, type ServerResponse } from 'node:http';
import { type Logger, type WeatherApiConfig } from '@agentrt/example-models';
import { readBody, sendJson } from '@agentrt/kit';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SpanKind, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api';
import { z } from 'zod';
import { WeatherToolError, getAlerts, getForecast } from './weather-tools.js';

export const TRACER_NAME = '@agentrt/example-mcp-server';
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** Marks the active MCP span of a tool call that answered `isError: true` (semconv `tool_error`). */
function toolError(message: string) {
  trace.getActiveSpan()?.setAttribute('error.type', 'tool_error');
  return { content: [{ type: 'text' as const, text: message }], isError: true };
}

/** The weather MCP server: tools `get_forecast` and `get_alerts` on the weather API. */
export function createWeatherMcpServer(api: WeatherApiConfig): McpServer {
  const server = new McpServer({ name: 'weather', version: '0.1.0' });
  server.registerTool(
    'get_forecast',
    {
      description: 'Weather forecast for a US location (the next few forecast periods)',
      inputSchema: {
        latitude: z.number().min(-90).max(90).describe('Latitude of the location'),
        longitude: z.number().min(-180).max(180).describe('Longitude of the location'),
      },
    },
    async ({ latitude, longitude }) => {
      try {
        const periods = await getForecast(api, latitude, longitude);
        const text = periods.map((p) => `${p.name}: ${p.temperature}, ${p.wind}, ${p.forecast}`).join('\n');
        return { content: [{ type: 'text', text }], structuredContent: { periods } };
      } catch (error) {
        if (error instanceof WeatherToolError) return toolError(error.message);
        throw error;
      }
    },
  );
  server.registerTool(
    'get_alerts',
    {
      description: 'Active weather alerts for a US state',
      inputSchema: {
        state: z
          .string()
          .regex(/^[A-Z]{2}$/)
          .describe('Two-letter US state code, e.g. CO'),
      },
    },
    async ({ state }) => {
      try {
        const alerts = await getAlerts(api, state);
        const text = alerts.length
          ? alerts.map((a) => `${a.event} (${a.severity}): ${a.headline}`).join('\n')
          : `No active alerts for ${state}.`;
        return { content: [{ type: 'text', text }], structuredContent: { alerts } };
      } catch (error) {
        if (error instanceof WeatherToolError) return toolError(error.message);
        throw error;
      }
    },
  );
  return server;
}

interface JsonRpcMessage {
  id?: string | number;
  method?: string;
  params?: { name?: unknown; protocolVersion?: unknown; _meta?: Record<string, unknown> };
}

export interface McpHandlerOptions {
  api: WeatherApiConfig;
  jsonResponse: boolean;
  logger: Logger;
}

/**
 * The HTTP side: `POST /mcp` (and `/mcp/`) in stateless Streamable HTTP mode, a fresh server and
 * transport per request (the default of MCP runtimes, which may send an `Mcp-Session-Id` the server
 * did not mint). `GET`/`DELETE` answer 405, which MCP clients accept. Each JSON-RPC request gets a
 * SERVER span per the OpenTelemetry MCP conventions: `{mcp.method.name} {tool}`, `mcp.method.name`,
 * `mcp.session.id`, `mcp.protocol.version`, `jsonrpc.request.id`, `gen_ai.tool.name` and
 * `gen_ai.operation.name=execute_tool` on tool calls, `error.type` on failures; a trace context in
 * `params._meta` is its parent when present.
 */
export function createMcpHandler({ api, jsonResponse, logger }: McpHandlerOptions) {
  const tracer = trace.getTracer(TRACER_NAME);
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/mcp' && path !== '/mcp/')
      return sendJson(res, 404, { error: `no route ${path}; MCP is at /mcp` });
    if (req.method !== 'POST')
      return sendJson(
        res,
        405,
        { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Method not allowed' } },
        {
          allow: 'POST',
        },
      );
    let raw: Buffer;
    let message: JsonRpcMessage | JsonRpcMessage[];
    try {
      raw = await readBody(req, MAX_BODY_BYTES);
      message = JSON.parse(raw.toString('utf8')) as JsonRpcMessage | JsonRpcMessage[];
    } catch (error) {
      return sendJson(res, 400, {
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: `Parse error: ${(error as Error).message}` },
      });
    }
    const first = Array.isArray(message) ? message[0] : message;
    const method = first?.method ?? 'unknown';
    const tool =
      method === 'tools/call' && typeof first?.params?.name === 'string' ? first.params.name : undefined;
    const sessionId = req.headers['mcp-session-id'];
    const protocolVersion = req.headers['mcp-protocol-version'] ?? first?.params?.protocolVersion;
    const meta = first?.params?._meta;
    const parent =
      meta && typeof meta.traceparent === 'string'
        ? propagation.extract(context.active(), meta)
        : context.active();
    const span = tracer.startSpan(
      tool ? `${method} ${tool}` : method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'mcp.method.name': method,
          'network.transport': 'tcp',
          'network.protocol.name': 'http',
          ...(typeof sessionId === 'string' ? { 'mcp.session.id': sessionId } : {}),
          ...(typeof protocolVersion === 'string' ? { 'mcp.protocol.version': protocolVersion } : {}),
          ...(first?.id !== undefined ? { 'jsonrpc.request.id': String(first.id) } : {}),
          ...(tool ? { 'gen_ai.tool.name': tool, 'gen_ai.operation.name': 'execute_tool' } : {}),
          ...(req.socket.remoteAddress ? { 'client.address': req.socket.remoteAddress } : {}),
        },
      },
      parent,
    );
    res.once('close', () => {
      if (res.statusCode >= 400) {
        span.setAttribute('error.type', String(res.statusCode));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    });
    const server = createWeatherMcpServer(api);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: jsonResponse,
    });
    res.once('close', () => void transport.close().then(() => server.close()));
    try {
      await context.with(trace.setSpan(parent, span), async () => {
        await server.connect(transport);
        await transport.handleRequest(req, res, message);
      });
    } catch (error) {
      logger.error('mcp request failed', { method, error: String(error) });
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      if (!res.headersSent)
        sendJson(res, 500, {
          jsonrpc: '2.0',
          id: first?.id ?? null,
          error: { code: -32603, message: 'Internal error' },
        });
    }
  };
}

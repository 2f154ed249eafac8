import { createHash, randomUUID } from 'node:crypto';
import { type VersionRecord } from '../control/store.js';
import { type ErrorType, type RuntimeApiError } from '../errors.js';

/** `protocolConfiguration.serverProtocol`: what a session's container serves. */
export type ServerProtocol = 'HTTP' | 'MCP' | 'A2A' | 'AGUI';

/** The protocol of a version; HTTP when the runtime was created without `protocolConfiguration`. */
export function serverProtocolOf(version: VersionRecord): ServerProtocol {
  const p = version.config.protocolConfiguration?.serverProtocol;
  return p === 'MCP' || p === 'A2A' || p === 'AGUI' ? p : 'HTTP';
}

/**
 * Where an invocation lands in the container. Hosted, the port differs too (HTTP and AG-UI 8080,
 * MCP 8000, A2A 9000); locally every worker listens on its own `PORT`, so only the path differs.
 */
export const CONTAINER_INVOCATION_PATH: Readonly<Record<ServerProtocol, string>> = {
  HTTP: '/invocations',
  AGUI: '/invocations',
  MCP: '/mcp',
  A2A: '/',
};

export const MCP_SESSION_HEADER = 'mcp-session-id';

/** Whether a JSON-RPC body (one message or a batch) holds an `initialize` request. */
export function isMcpInitialize(body: Buffer): boolean {
  if (body.length === 0 || body.length > 1_000_000) return false;
  try {
    const parsed = JSON.parse(body.toString('utf8')) as unknown;
    const messages = Array.isArray(parsed) ? parsed : [parsed];
    return messages.some(
      (m) => typeof m === 'object' && m !== null && (m as { method?: unknown }).method === 'initialize',
    );
  } catch {
    return false; // not JSON: the container answers it (400 parse error)
  }
}

/** The runtime session an MCP request belongs to, and the `Mcp-Session-Id` the container gets. */
export interface McpRoute {
  sessionId: string;
  /** Sent to the container; absent for an `initialize` that came without one. */
  forwardMcpSessionId: string | undefined;
}

export interface McpSessionRouter {
  /**
   * Session key: the runtime session header when sent, else the runtime session the MCP session
   * id was bound to (or one derived from it), else a new one. `validate` checks a caller's id.
   */
  route(
    runtimeId: string,
    headers: { runtimeSessionId?: string; mcpSessionId?: string },
    initialize: boolean,
    validate: (id: string) => string,
    isValid: (id: string) => boolean,
  ): McpRoute;
  /** The container minted its own MCP session id: later requests carrying it reach the same session. */
  bind(runtimeId: string, mcpSessionId: string, sessionId: string): void;
  /** The runtime session a server-minted MCP session id was bound to (none for other ids). */
  boundSession(runtimeId: string, mcpSessionId: string): string | undefined;
}

const MAX_BINDINGS = 100_000;

/**
 * Maps MCP session ids to runtime sessions, so that an MCP client that knows nothing of AgentCore
 * still gets one isolated session per MCP session (the hosted service routes by `Mcp-Session-Id`).
 */
export function createMcpSessionRouter(): McpSessionRouter {
  const bindings = new Map<string, string>(); // runtimeId\0mcpSessionId → runtime session id
  const key = (runtimeId: string, mcpId: string) => `${runtimeId}\u0000${mcpId}`;
  return {
    route(runtimeId, headers, initialize, validate, isValid) {
      const { runtimeSessionId, mcpSessionId } = headers;
      let sessionId: string;
      if (runtimeSessionId !== undefined) sessionId = validate(runtimeSessionId);
      else if (mcpSessionId !== undefined) {
        const bound = bindings.get(key(runtimeId, mcpSessionId));
        // An id the runtime never saw (a server's own short ids, or a client reusing one after a
        // restart) still maps to one stable session; a hash keeps it inside the 33–256 rule.
        sessionId =
          bound ??
          (isValid(mcpSessionId)
            ? mcpSessionId
            : `mcp-${createHash('sha256').update(mcpSessionId).digest('hex')}`);
      } else sessionId = randomUUID();
      // A stateful server mints its id on `initialize` and rejects ids it did not mint, so an
      // `initialize` without one goes on without one; everything else carries the session key.
      const forwardMcpSessionId = mcpSessionId ?? (initialize ? undefined : sessionId);
      return { sessionId, forwardMcpSessionId };
    },
    bind(runtimeId, mcpSessionId, sessionId) {
      if (bindings.size >= MAX_BINDINGS) {
        const oldest = bindings.keys().next().value;
        if (oldest !== undefined) bindings.delete(oldest);
      }
      bindings.set(key(runtimeId, mcpSessionId), sessionId);
    },
    boundSession: (runtimeId, mcpSessionId) => bindings.get(key(runtimeId, mcpSessionId)),
  };
}

/** JSON-RPC error code and HTTP status per runtime error, as the MCP and A2A contracts list them. */
const JSON_RPC_ERRORS: Record<'MCP' | 'A2A', Partial<Record<ErrorType, [code: number, status: number]>>> = {
  MCP: {
    ValidationException: [-32006, 200],
    UnauthorizedException: [-32001, 401],
    ServiceQuotaExceededException: [-32003, 200],
    AccessDeniedException: [-32002, 403],
    ResourceNotFoundException: [-32004, 200],
    ConflictException: [-32005, 200],
    RetryableConflictException: [-32005, 200],
    RuntimeClientError: [-32010, 200],
    ThrottlingException: [-32003, 200],
  },
  A2A: {
    ValidationException: [-32052, 400],
    ServiceQuotaExceededException: [-32053, 429],
    ResourceNotFoundException: [-32051, 404],
    ConflictException: [-32054, 409],
    RetryableConflictException: [-32054, 409],
    RuntimeClientError: [-32055, 424],
    ThrottlingException: [-32053, 429],
  },
};

/** The JSON-RPC `id` of a request body (one message), or null. */
export function jsonRpcIdOf(body: Buffer): string | number | null {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { id?: unknown };
    return typeof parsed.id === 'string' || typeof parsed.id === 'number' ? parsed.id : null;
  } catch {
    return null;
  }
}

/**
 * A runtime error as the JSON-RPC error an MCP or A2A client parses (the AWS contracts' codes), or
 * undefined where the contract keeps the plain AWS error (401/403 challenges, 500s).
 */
export function toJsonRpcError(
  protocol: ServerProtocol,
  error: RuntimeApiError,
  id: string | number | null,
): { status: number; body: string } | undefined {
  if (protocol !== 'MCP' && protocol !== 'A2A') return undefined;
  const mapped = JSON_RPC_ERRORS[protocol][error.type];
  if (!mapped || (error.status === 401 && protocol === 'A2A')) return undefined;
  const [code, status] = mapped;
  return {
    status,
    body: JSON.stringify({ jsonrpc: '2.0', id, error: { code, message: error.message } }),
  };
}

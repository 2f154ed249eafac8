// One traced call of the runtime's API as its handler sees it (Operation: the call's SERVER span and
// metric dimensions), the WebSocket connection's variant, and the operation of an untraced route.
import { type Attributes, type Context, ROOT_CONTEXT } from '@opentelemetry/api';
import { type StartPhaseRecorder } from '../sessions/session.js';

/** The runtime, version and endpoint an operation acts on, once the handler has resolved them. */
export interface OperationTarget {
  runtimeArn: string;
  runtimeId: string;
  runtimeName: string;
  version?: number;
  qualifier?: string;
  protocol?: string;
}

/** One traced control- or data-plane call: its SERVER span and its metric dimensions. */
export interface Operation {
  readonly name: string;
  /** The span's context (the parent of everything the call starts). */
  readonly context: Context;
  setTarget(target: OperationTarget): void;
  setSession(sessionId: string): void;
  /** Runs a session start as a child span `StartSession`; marks the operation a cold start. */
  coldStart<T>(start: (phase: StartPhaseRecorder) => Promise<T>): Promise<T>;
  /** The trace headers to send downstream (`traceparent`, `tracestate`, X-Ray), continuing this span. */
  traceHeaders(): Record<string, string>;
  /** Records the error that failed the call (its AWS error type goes on the span and the metrics). */
  fail(error: unknown): void;
  /** Adds attributes to the call's span (the request a replay re-sends). */
  setAttributes(attributes: Attributes): void;
  /** Links the call's span to a span of another trace (the invocation a replay re-sends). */
  linkTo(traceId: string, spanId: string, attributes?: Attributes): void;
}

/** The AWS API name of a WebSocket connection to a runtime (its SERVER span's name). */
export const WEBSOCKET_OPERATION = 'InvokeAgentRuntimeWithWebSocketStream';

/** The attributes a WebSocket connection's span ends with. */
export const WS_ATTRIBUTES = {
  closeCode: 'agentrt.websocket.close_code',
  /** `client` or `container`: the side whose close ended the connection. */
  closedBy: 'agentrt.websocket.closed_by',
  /** Data frames from the caller to the container. */
  framesIn: 'agentrt.websocket.frames_in',
  /** Data frames from the container to the caller. */
  framesOut: 'agentrt.websocket.frames_out',
} as const;

/** One WebSocket connection: an Operation that counts frames and ends at the close. */
export interface WebSocketOperation extends Operation {
  frame(direction: 'in' | 'out'): void;
  /** Ends the span once: a bridged connection by its close, a refused upgrade by its HTTP status. */
  end(outcome: { closeCode: number; closedBy: 'client' | 'container' } | { status: number }): void;
}

/** The operation of an untraced route (the runtime's health probe): carries nothing on. */
export const UNTRACED_OPERATION: Operation = {
  name: 'untraced',
  context: ROOT_CONTEXT,
  setTarget: () => undefined,
  setSession: () => undefined,
  coldStart: (start) => start(() => undefined),
  traceHeaders: () => ({}),
  fail: () => undefined,
  setAttributes: () => undefined,
  linkTo: () => undefined,
};

/**
 * Header names (lowercase, as Node's `IncomingMessage.headers` has them) that agent runtimes send
 * into a container. The `x-cloud-*` names are ours; the `x-amzn-*` names are the AWS Bedrock
 * AgentCore aliases, accepted everywhere ours are.
 */

/** X-Ray style trace header, our name: `Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=0|1`. */
export const CLOUD_TRACE_ID_HEADER = 'x-cloud-trace-id';
/** X-Ray style trace header, the AWS name. */
export const AMZN_TRACE_ID_HEADER = 'x-amzn-trace-id';
/** Both trace-id header names, ours first (it wins when both are sent). */
export const TRACE_ID_HEADERS = [CLOUD_TRACE_ID_HEADER, AMZN_TRACE_ID_HEADER] as const;

/** Runtime session id, our name. */
export const CLOUD_SESSION_ID_HEADER = 'x-cloud-agent-runtime-session-id';
/** Runtime session id, the AWS name. */
export const AMZN_SESSION_ID_HEADER = 'x-amzn-bedrock-agentcore-runtime-session-id';
/** Both session-id header names, ours first. */
export const SESSION_ID_HEADERS = [CLOUD_SESSION_ID_HEADER, AMZN_SESSION_ID_HEADER] as const;

/** Per-request id, our name. */
export const CLOUD_REQUEST_ID_HEADER = 'x-cloud-agent-runtime-request-id';
/** Per-request id, the AWS name. */
export const AMZN_REQUEST_ID_HEADER = 'x-amzn-bedrock-agentcore-runtime-request-id';
/** Both request-id header names, ours first. */
export const REQUEST_ID_HEADERS = [CLOUD_REQUEST_ID_HEADER, AMZN_REQUEST_ID_HEADER] as const;

/** Runtime user id, our name. */
export const CLOUD_USER_ID_HEADER = 'x-cloud-agent-runtime-user-id';
/** Runtime user id, the AWS name. */
export const AMZN_USER_ID_HEADER = 'x-amzn-bedrock-agentcore-runtime-user-id';
/** Both user-id header names, ours first. */
export const USER_ID_HEADERS = [CLOUD_USER_ID_HEADER, AMZN_USER_ID_HEADER] as const;

/** Custom headers with this prefix always reach the request context (ours). */
export const CLOUD_CUSTOM_HEADER_PREFIX = 'x-cloud-agent-runtime-custom-';
/** Custom headers with this prefix always reach the request context (AWS). */
export const AMZN_CUSTOM_HEADER_PREFIX = 'x-amzn-bedrock-agentcore-runtime-custom-';

/** Workload access token (current AWS name). */
export const WORKLOAD_ACCESS_TOKEN_HEADER = 'x-amz-bedrock-agentcore-identity-wat';
/** Workload access token (legacy AWS name). */
export const LEGACY_WORKLOAD_ACCESS_TOKEN_HEADER = 'workloadaccesstoken';
/** OAuth2 callback URL for three-legged flows. */
export const OAUTH2_CALLBACK_URL_HEADER = 'oauth2callbackurl';

/** W3C trace context and baggage. */
export const TRACEPARENT_HEADER = 'traceparent';
export const TRACESTATE_HEADER = 'tracestate';
export const BAGGAGE_HEADER = 'baggage';

/** The baggage key (and span attribute) that carries the session id. */
export const SESSION_ID_BAGGAGE_KEY = 'session.id';

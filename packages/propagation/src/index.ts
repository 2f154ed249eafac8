export {
  AMZN_CUSTOM_HEADER_PREFIX,
  AMZN_REQUEST_ID_HEADER,
  AMZN_SESSION_ID_HEADER,
  AMZN_TRACE_ID_HEADER,
  AMZN_USER_ID_HEADER,
  BAGGAGE_HEADER,
  CLOUD_CUSTOM_HEADER_PREFIX,
  CLOUD_REQUEST_ID_HEADER,
  CLOUD_SESSION_ID_HEADER,
  CLOUD_TRACE_ID_HEADER,
  CLOUD_USER_ID_HEADER,
  LEGACY_WORKLOAD_ACCESS_TOKEN_HEADER,
  OAUTH2_CALLBACK_URL_HEADER,
  REQUEST_ID_HEADERS,
  SESSION_ID_BAGGAGE_KEY,
  SESSION_ID_HEADERS,
  TRACEPARENT_HEADER,
  TRACESTATE_HEADER,
  TRACE_ID_HEADERS,
  USER_ID_HEADERS,
  WORKLOAD_ACCESS_TOKEN_HEADER,
} from './headers.js';
export { type HeaderCarrier, firstHeader, headerValue } from './carrier.js';
export { type CloudXRayPropagatorOptions, CloudXRayPropagator } from './cloud-xray-propagator.js';
export { type SessionHeaderPropagatorOptions, SessionHeaderPropagator } from './session-header-propagator.js';
export { MAX_SESSION_ID_LENGTH, isValidSessionId, readSessionId, sessionIdProblem } from './session-id.js';
export { type AgentPropagatorOptions, createAgentPropagator } from './agent-propagator.js';
export { RESTRICTED_HEADERS, RESTRICTED_HEADER_PREFIXES, isRestrictedHeader } from './restricted-headers.js';
export { type ServerResponseState, endServerSpan } from './server-span.js';
export {
  type GuardedRequest,
  type RequestGuardOptions,
  type RequestGuardRefusal,
  checkRequest,
  hostName,
} from './request-guard.js';

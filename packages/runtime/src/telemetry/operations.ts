/**
 * The AWS operation name of each route (`METHOD pattern`), as the SDK clients call them: the name of
 * the runtime's SERVER span and the `Operation` dimension of its metrics. A route missing here is
 * named `METHOD pattern`; `null` marks routes that are not traced (the runtime's own health probe).
 */
const OPERATIONS: Record<string, string | null> = {
  'GET /ping': null,
  'PUT /runtimes/': 'CreateAgentRuntime',
  'POST /runtimes/': 'ListAgentRuntimes',
  'GET /runtimes/:runtimeId/': 'GetAgentRuntime',
  'PUT /runtimes/:runtimeId/': 'UpdateAgentRuntime',
  'DELETE /runtimes/:runtimeId/': 'DeleteAgentRuntime',
  'POST /runtimes/:runtimeId/versions/': 'ListAgentRuntimeVersions',
  'PUT /runtimes/:runtimeId/runtime-endpoints/': 'CreateAgentRuntimeEndpoint',
  'POST /runtimes/:runtimeId/runtime-endpoints/': 'ListAgentRuntimeEndpoints',
  'GET /runtimes/:runtimeId/runtime-endpoints/:endpointName/': 'GetAgentRuntimeEndpoint',
  'PUT /runtimes/:runtimeId/runtime-endpoints/:endpointName/': 'UpdateAgentRuntimeEndpoint',
  'DELETE /runtimes/:runtimeId/runtime-endpoints/:endpointName/': 'DeleteAgentRuntimeEndpoint',
  'POST /tags/:resourceArn': 'TagResource',
  'DELETE /tags/:resourceArn': 'UntagResource',
  'GET /tags/:resourceArn': 'ListTagsForResource',
  'POST /runtimes/:runtime/invocations': 'InvokeAgentRuntime',
  'GET /runtimes/:runtime/invocations': 'InvokeAgentRuntime',
  'DELETE /runtimes/:runtime/invocations': 'InvokeAgentRuntime',
  'GET /runtimes/:runtime/invocations/.well-known/oauth-protected-resource':
    'GetOAuthProtectedResourceMetadata',
  'POST /runtimes/:runtime/stopruntimesession': 'StopRuntimeSession',
  'POST /runtimes/:runtime/commands': 'InvokeAgentRuntimeCommand',
  'GET /runtimes/:runtime/invocations/.well-known/agent-card.json': 'GetAgentCard',
  'POST /evaluations/evaluate/:evaluatorId': 'Evaluate',
  'POST /online-evaluation-configs/create': 'CreateOnlineEvaluationConfig',
  'POST /online-evaluation-configs': 'ListOnlineEvaluationConfigs',
  'GET /online-evaluation-configs/:onlineEvaluationConfigId': 'GetOnlineEvaluationConfig',
  'PUT /online-evaluation-configs/:onlineEvaluationConfigId': 'UpdateOnlineEvaluationConfig',
  'DELETE /online-evaluation-configs/:onlineEvaluationConfigId': 'DeleteOnlineEvaluationConfig',
};

/** The operation of a matched route; `null` for an untraced route; `undefined` when none matched. */
export function operationName(method: string, pattern: string | undefined): string | null {
  if (pattern === undefined) return `${method} (no route)`;
  const known = OPERATIONS[`${method} ${pattern}`];
  return known === undefined ? `${method} ${pattern}` : known;
}

/** Operations that start or use a session: the ones AgentCore's runtime metrics count. */
export const DATA_PLANE_OPERATIONS: ReadonlySet<string> = new Set([
  'InvokeAgentRuntime',
  'InvokeAgentRuntimeCommand',
  'StopRuntimeSession',
]);

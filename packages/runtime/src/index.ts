export { createRuntimeServer } from './server.js';
export type { RuntimeServer } from './server.js';
export { resolveRuntimeConfig, DEFAULT_PORT } from './config.js';
export type { RuntimeServerOptions, RuntimeConfig, IsolationSetting, LogLevel } from './config.js';
export type { Isolation, IsolationMode, NetworkMode } from './sessions/isolation.js';
export { detectIsolation } from './sessions/isolation.js';
export type { Session, SessionState } from './sessions/session-manager.js';
export { RuntimeApiError } from './errors.js';
export type { ErrorType } from './errors.js';
export { SESSION_HEADER, CLOUD_SESSION_HEADER } from './data/data-plane.js';
export { createRuntimeClient, decodeCommandStream, DEFAULT_ROLE_ARN } from './client.js';
export { RuntimeClientRequestError } from './client-transport.js';
export type {
  RuntimeClient,
  RuntimeSummary,
  RuntimeDetail,
  RuntimeSpec,
  InvokeOptions,
  InvokeResult,
  CommandChunk,
  RuntimeEndpoint,
  ActiveSession,
  OnlineEvaluationSummary,
  OnlineEvaluationDetail,
} from './client.js';
export { createEvaluationService } from './evaluate/evaluation-service.js';
export type { EvaluationService, EvaluationSettings } from './evaluate/evaluation-service.js';
export { BUILTIN_EVALUATORS } from './evaluate/catalog.js';
export type { EvaluatorSpec, EvaluationLevel } from './evaluate/catalog.js';
export type { EvaluationResult, TokenUsage } from './evaluate/evaluate.js';
export { DatasetError, parseDataset, readDatasetFile, sessionItems } from './evaluate/dataset.js';
export type { DatasetItem } from './evaluate/dataset.js';
export { runBatch, mapBounded } from './evaluate/batch.js';
export type { BatchOptions, BatchProgress, ItemOutcome } from './evaluate/batch.js';
export {
  customEvaluator,
  customEvaluatorFromPath,
  readEvaluatorsFile,
  EvaluatorConfigError,
} from './evaluate/custom/custom-evaluators.js';
export type { CustomEvaluatorConfig } from './evaluate/custom/custom-evaluators.js';
export { createOnlineEvaluator, sampled } from './evaluate/online.js';
export type { OnlineEvaluator, OnlineRule } from './evaluate/online.js';
export { sessionNetworkPolicy } from './sessions/backends/kubernetes/network-policy.js';
export {
  sessionPod,
  sessionStorageClaim,
  podSettingsOf,
  sessionPodName,
  sessionSelector,
} from './sessions/backends/kubernetes/pod-spec.js';
export type { PodSettings, SessionPodInput, PodFor } from './sessions/backends/kubernetes/pod-spec.js';
export type { SessionTarget } from './sessions/backend.js';

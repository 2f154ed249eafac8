export {
  type AgentServiceConfig,
  DEFAULT_WEATHER_API_BASE_URL,
  DEFAULT_WEATHER_API_USER_AGENT,
  type Env,
  type FixtureServerConfig,
  type ModelConfig,
  type ModelProviderName,
  type ModelProviderSource,
  type WeatherApiConfig,
  envBoolean,
  envInteger,
  envString,
  readAgentServiceConfig,
  readFixtureServerConfig,
  readModelConfig,
  readWeatherApiConfig,
} from './config.js';
export {
  type AgentAnswer,
  type AgentRunOptions,
  type AnswerMetadata,
  askWeatherAgent,
  runWeatherAgent,
  streamWeatherSummary,
  textDelta,
  weatherSystemPrompt,
} from './agent.js';
export {
  GENAI_TRACER_NAME,
  type GenAiProviderName,
  type GenAiRunOptions,
  GenAiTracedModel,
  type ToolCallInfo,
  sessionIdFromContext,
  traceAgentRun,
  traceToolCall,
} from './genai-telemetry.js';
export { skipUnrecordedStrandsSpanWork } from './strands-telemetry.js';
export {
  type LogFields,
  type LogLevel,
  type Logger,
  type LoggerOptions,
  createLogger,
  parseLogLevel,
} from './logger.js';
export {
  DEFAULT_BEDROCK_MODEL_ID,
  DEFAULT_OPENAI_MODEL_ID,
  type ModelSelection,
  bootService,
  serveUntilSignal,
  createModel,
  createServiceModel,
  describeModel,
} from './providers.js';
export { OFFLINE_MODEL_ID, OfflineModel, type OfflineModelConfig } from './offline/offline-model.js';
export { type Judgement, isJudgePrompt, judgeAnswerText, judgementOf } from './offline/judge-answer.js';
export {
  HTTP_REQUEST_TOOL,
  READY_TO_SUMMARIZE_TOOL,
  type Location,
  type PlanInput,
  type PlanMessage,
  type PlanStep,
  findLocation,
  planNextStep,
  writeForecastSummary,
} from './offline/planner.js';
export {
  type HttpRequestToolOptions,
  type HttpToolResult,
  ToolRequestError,
  createHttpRequestTool,
  createReadyToSummarizeTool,
} from './tools.js';
export { HttpError, accessLog, detailErrors, readJsonBody, requireObject, routeNotFound } from './http.js';

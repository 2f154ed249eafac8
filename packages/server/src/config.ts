import type { Logger } from './logger.js';

/** Settings read from the environment; explicit options passed in code win over these. */
export interface ServerConfig {
  /** `PORT`: the port `serve()` listens on. Default 8080 (the container contract). */
  readonly port: number;
  /** `AGENTRT_HOST`: the interface `serve()` binds. Default `0.0.0.0` (the container contract). */
  readonly host: string;
  /** `AGENTRT_MAX_BODY_BYTES`: the largest accepted /invocations body. Default 100 MB. */
  readonly maxBodyBytes: number;
  /** `AGENTRT_SSE_HEARTBEAT_MS`: silence after which a stream gets a `: heartbeat` comment. Default 15000. */
  readonly heartbeatMs: number;
  /** `AGENTRT_DRAIN_TIMEOUT_MS`: how long SIGTERM waits for in-flight work. Default 10000. */
  readonly drainTimeoutMs: number;
  /** `AGENTRT_LOG_LEVEL`: `debug`, `info`, `warn` or `error` for `serve()`'s JSON-line log. Default `info`. */
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
}

export const DEFAULT_CONFIG: ServerConfig = Object.freeze({
  port: 8080,
  host: '0.0.0.0',
  maxBodyBytes: 100 * 1024 * 1024,
  heartbeatMs: 15_000,
  drainTimeoutMs: 10_000,
  logLevel: 'info',
});

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Reads the server's environment variables. Blank means unset; a bad value is reported to `warn`
 * and the default is used, so a typo never stops an agent from starting.
 */
export function readConfig(env: Env = process.env, warn?: Logger['warn']): ServerConfig {
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name]?.trim();
    if (!raw) return fallback;
    const value = Number(raw);
    if (Number.isInteger(value) && value >= min && value <= max) return value;
    warn?.(`ignoring ${name}=${JSON.stringify(raw)}: expected an integer from ${min} to ${max}`);
    return fallback;
  };
  const level = env.AGENTRT_LOG_LEVEL?.trim().toLowerCase();
  const levels = ['debug', 'info', 'warn', 'error'] as const;
  const logLevel = levels.find((l) => l === level);
  if (level && !logLevel) warn?.(`ignoring AGENTRT_LOG_LEVEL=${JSON.stringify(level)}`);
  return Object.freeze({
    port: int('PORT', DEFAULT_CONFIG.port, 0, 65_535),
    host: env.AGENTRT_HOST?.trim() || DEFAULT_CONFIG.host,
    maxBodyBytes: int('AGENTRT_MAX_BODY_BYTES', DEFAULT_CONFIG.maxBodyBytes, 0, Number.MAX_SAFE_INTEGER),
    heartbeatMs: int('AGENTRT_SSE_HEARTBEAT_MS', DEFAULT_CONFIG.heartbeatMs, 0, 3_600_000),
    drainTimeoutMs: int('AGENTRT_DRAIN_TIMEOUT_MS', DEFAULT_CONFIG.drainTimeoutMs, 0, 3_600_000),
    logLevel: logLevel ?? DEFAULT_CONFIG.logLevel,
  });
}

import { type Agent, request } from 'node:http';
import { connect } from 'node:net';

/** What the last `/ping` said. `timeOfLastUpdateMs` is absent when the worker does not send it. */
export interface PingState {
  status: 'Healthy' | 'HealthyBusy' | 'Unknown';
  timeOfLastUpdateMs?: number;
}

type ProbeTarget = { socketPath: string } | { host: string; port: number };

function parseTimeOfLastUpdate(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value < 1e11 ? value * 1000 : value; // unix s or ms
  if (typeof value === 'string') {
    const ms = /^\d+(\.\d+)?$/.test(value) ? Number(value) * 1000 : Date.parse(value);
    return Number.isFinite(ms) ? ms : undefined;
  }
  return undefined;
}

/** `GET /ping` over `target`: what the worker says of its health (HTTP, A2A and AG-UI workers). */
export function pingOver(target: ProbeTarget, agent: Agent, timeoutMs: number): Promise<PingState> {
  return new Promise((resolve, reject) => {
    const req = request({ ...target, path: '/ping', method: 'GET', agent, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body = (body + c).slice(0, 4096)));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`/ping answered ${res.statusCode}`));
        let parsed: Record<string, unknown> = {};
        try {
          parsed = JSON.parse(body) as Record<string, unknown>;
        } catch {
          // A 200 with a non-JSON body still means the server is up; its status is unknown.
        }
        const status =
          parsed.status === 'Healthy' || parsed.status === 'HealthyBusy' ? parsed.status : 'Unknown';
        const t = parseTimeOfLastUpdate(parsed.time_of_last_update);
        resolve(t === undefined ? { status } : { status, timeOfLastUpdateMs: t });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`/ping timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** Resolves once something accepts a TCP connection on the loopback port. */
function probeConnect(port: number, timeoutMs: number): Promise<PingState> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, timeout: timeoutMs });
    socket.once('connect', () => {
      socket.destroy();
      resolve({ status: 'Healthy' });
    });
    socket.once('timeout', () => socket.destroy(new Error(`connect timed out after ${timeoutMs} ms`)));
    socket.once('error', reject);
  });
}

/**
 * Through a sandbox's socket a connect always succeeds (its bridge listens): any HTTP answer from
 * the worker behind it, whatever the status, is what shows an MCP server is up.
 */
function answersHttp(target: ProbeTarget, agent: Agent, timeoutMs: number): Promise<PingState> {
  return new Promise((resolve, reject) => {
    const req = request({ ...target, path: '/ping', method: 'GET', agent, timeout: timeoutMs }, (res) => {
      res.resume();
      resolve({ status: 'Healthy' });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

export interface HealthProbeOptions {
  port: number;
  socketPath?: string | undefined;
  /** `GET /ping` (HTTP, A2A and AG-UI), or, for MCP servers, whose contract has no `/ping`, a connect. */
  healthCheck?: 'ping' | 'connect';
}

/** How a local worker's readiness and health are probed, over its socket or its loopback port. */
export function healthProbe(
  options: HealthProbeOptions,
  agent: Agent,
): (timeoutMs?: number) => Promise<PingState> {
  const { port, socketPath } = options;
  const target = socketPath ? { socketPath } : { host: '127.0.0.1', port };
  return (timeoutMs = 2000) =>
    options.healthCheck !== 'connect'
      ? pingOver(target, agent, timeoutMs)
      : socketPath
        ? answersHttp(target, agent, timeoutMs)
        : probeConnect(port, timeoutMs);
}

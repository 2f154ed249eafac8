import { type IncomingMessage, type ServerResponse } from 'node:http';
import { type Operation } from '../telemetry/operation.js';

export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  /** Decoded path labels by name. */
  params: Record<string, string>;
  query: URLSearchParams;
  requestId: string;
  /** The call's SERVER span and metric dimensions (telemetry/operation.ts). */
  operation: Operation;
}

export type RouteHandler = (ctx: RouteContext) => Promise<void> | void;

interface Route {
  method: string;
  pattern: string;
  segments: string[];
  handler: RouteHandler;
}

export interface Router {
  add(method: string, pattern: string, handler: RouteHandler): void;
  /** Finds the route; `methodMismatch` tells a 405-like miss from a plain 404. */
  match(
    method: string,
    rawPath: string,
  ): { handler: RouteHandler; params: Record<string, string>; pattern: string } | { methodMismatch: boolean };
}

/**
 * Splits the RAW path on `/` before percent-decoding each segment, because the SDK sends an ARN
 * label as one segment with its `/` encoded as `%2F`. A trailing slash is optional.
 */
export function splitPath(rawPath: string): string[] {
  return rawPath
    .replace(/^\/+/, '')
    .replace(/\/+$/, '')
    .split('/')
    .filter((s, i, all) => s !== '' || all.length === 1)
    .map((s) => decodeURIComponent(s));
}

export function createRouter(): Router {
  const routes: Route[] = [];
  return {
    add(method, pattern, handler) {
      routes.push({ method, pattern, segments: splitPath(pattern), handler });
    },
    match(method, rawPath) {
      const parts = splitPath(rawPath);
      let methodMismatch = false;
      for (const route of routes) {
        if (route.segments.length !== parts.length) continue;
        const params: Record<string, string> = {};
        const ok = route.segments.every((seg, i) => {
          const part = parts[i] ?? '';
          if (seg.startsWith(':')) {
            params[seg.slice(1)] = part;
            return part !== '';
          }
          return seg === part;
        });
        if (!ok) continue;
        if (route.method !== method) {
          methodMismatch = true;
          continue;
        }
        return { handler: route.handler, params, pattern: route.pattern };
      }
      return { methodMismatch };
    },
  };
}

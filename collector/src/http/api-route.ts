import type { IncomingMessage, ServerResponse } from 'node:http';

/** What a route gets: the request, its response, the query string and the path's match. */
export interface ApiContext {
  req: IncomingMessage;
  res: ServerResponse;
  params: URLSearchParams;
  match: RegExpExecArray;
}

/**
 * A route's answer: JSON bytes made elsewhere (a query thread), a value sent as JSON (200), or
 * undefined once the route answered itself (a stream, an error body of its own).
 */
export type ApiAnswer = Uint8Array | object | undefined;

/** One row of the API's route table (GET routes answer HEAD too). */
export interface ApiRoute {
  method: 'GET' | 'POST';
  /** The whole path, anchored; its groups are the path's parameters. */
  path: RegExp;
  handle(ctx: ApiContext): Promise<ApiAnswer> | ApiAnswer;
}

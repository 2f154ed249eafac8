import { type ServerResponse } from 'node:http';
import { sendJson } from '@agentrt/kit';
import { StoreUnavailableError } from '../control/store/kubernetes-store.js';
import { RuntimeApiError } from '../errors.js';
import { type Logger } from '../logger.js';

/** The one error handler: any error becomes the AWS JSON error shape the SDK clients parse. */
export function sendError(res: ServerResponse, error: unknown, requestId: string, logger: Logger): void {
  let err: RuntimeApiError;
  if (error instanceof RuntimeApiError) err = error;
  else if (error instanceof StoreUnavailableError)
    // The records live in the cluster and its API server did not answer: nothing was written.
    err = new RuntimeApiError(
      'ServiceException',
      `${error.message}; retry`,
      {},
      { headers: { 'retry-after': '5' } },
    );
  else if (error instanceof URIError)
    err = new RuntimeApiError('ValidationException', `path: malformed percent-encoding (${error.message})`, {
      reason: 'CannotParse',
    });
  else {
    logger.error('internal error', {
      requestId,
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
    err = new RuntimeApiError(
      'InternalServerException',
      `Internal error; see the runtime log for request ${requestId}`,
    );
  }
  if (err.status >= 500 && error instanceof RuntimeApiError)
    logger.error(err.message, { requestId, type: err.type });
  if (res.headersSent) {
    res.destroy(err);
    return;
  }
  sendJson(
    res,
    err.status,
    { message: err.message, ...err.extra },
    { ...err.headers, 'x-amzn-errortype': err.type, 'x-amzn-requestid': requestId },
  );
}

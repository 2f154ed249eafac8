import { HttpError } from '@agentrt/kit';

/** The AWS error names the SDK clients know for the runtime operations, with their HTTP status. */
export const ERROR_STATUS = {
  ValidationException: 400,
  UnauthorizedException: 401,
  ServiceQuotaExceededException: 402,
  AccessDeniedException: 403,
  ResourceNotFoundException: 404,
  ConflictException: 409,
  RetryableConflictException: 409,
  RuntimeClientError: 424,
  ThrottlingException: 429,
  InternalServerException: 500,
  /** What the sessions run on cannot be reached now (a cluster's API server): retry later. */
  ServiceException: 503,
} as const;

export type ErrorType = keyof typeof ERROR_STATUS;

export interface FieldError {
  name: string;
  message: string;
}

/**
 * The one error class of the runtime's HTTP server: @agentrt/kit's HttpError whose code is the AWS
 * error name. The error handler turns it into the AWS JSON error shape (`x-amzn-errortype` header
 * plus `{"message"}` body) that the SDK clients parse into the modelled exception. `expose` is false
 * only for 500s, whose detail goes to the log.
 */
export class RuntimeApiError extends HttpError {
  override name = 'RuntimeApiError';
  constructor(
    readonly type: ErrorType,
    message: string,
    readonly extra: Record<string, unknown> = {},
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    const status = ERROR_STATUS[type];
    super(status, message, { ...options, code: type, expose: status < 500 || type === 'ServiceException' });
  }
}

/** A ValidationException naming the field, as the SDK exposes it (`reason`, `fieldList`). */
export function validationError(field: string, message: string): RuntimeApiError {
  return new RuntimeApiError('ValidationException', `${field}: ${message}`, {
    reason: 'FieldValidationFailed',
    fieldList: [{ name: field, message }],
  });
}

export function notFound(message: string): RuntimeApiError {
  return new RuntimeApiError('ResourceNotFoundException', message);
}

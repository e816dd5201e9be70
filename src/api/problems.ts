/**
 * RFC 9457 problem details: every error the API answers is one of these.
 * Types are stable URIs under one base, so clients can match on them.
 */
export const PROBLEM_BASE = 'https://onceflow.dev/problems/';

export const ProblemType = {
  validation: 'validation',
  malformedJson: 'malformed-json',
  missingIdempotencyKey: 'missing-idempotency-key',
  invalidIdempotencyKey: 'invalid-idempotency-key',
  invalidPreference: 'invalid-preference',
  unknownOperation: 'unknown-operation',
  idempotencyKeyReused: 'idempotency-key-reused',
  unauthorized: 'unauthorized',
  forbidden: 'forbidden',
  notFound: 'not-found',
  conflict: 'conflict',
  notResolvable: 'attempt-not-unknown',
  payloadTooLarge: 'payload-too-large',
  unsupportedMediaType: 'unsupported-media-type',
  rateLimited: 'rate-limited',
  budgetExhausted: 'budget-exhausted',
  unavailable: 'service-unavailable',
  internal: 'internal',
  badRequest: 'bad-request',
  badUrl: 'bad-url',
  uriTooLong: 'uri-too-long',
  headersTooLarge: 'headers-too-large',
  requestTimeout: 'request-timeout',
  methodNotAllowed: 'method-not-allowed',
  notImplemented: 'not-implemented',
  duplicateHeader: 'duplicate-header',
  invalidDeadline: 'invalid-deadline',
  routeNotEligible: 'route-not-eligible',
  routeVersionState: 'route-version-state',
  csrfTokenMissing: 'csrf-token-missing',
  csrfTokenInvalid: 'csrf-token-invalid',
} as const;
export type ProblemType = (typeof ProblemType)[keyof typeof ProblemType];

export interface FieldError {
  pointer: string;
  detail: string;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

/** A domain error that the error handler answers as problem+json. */
export class ProblemError extends Error {
  override name = 'ProblemError';
  constructor(
    readonly status: number,
    readonly problemType: ProblemType,
    readonly title: string,
    detail: string,
    readonly extras: { errors?: FieldError[]; headers?: Record<string, string>; [key: string]: unknown } = {},
    options?: { cause?: unknown },
  ) {
    super(detail, options);
  }

  toProblem(): Problem {
    const { headers: _headers, ...extensions } = this.extras;
    return { type: PROBLEM_BASE + this.problemType, title: this.title, status: this.status, detail: this.message, ...extensions };
  }
}

export const notFound = (what = 'job'): ProblemError => new ProblemError(404, ProblemType.notFound, 'Not found', `no such ${what}`);

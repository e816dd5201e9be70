/**
 * Maps what the official SDKs throw (openai and @anthropic-ai/sdk share one
 * Stainless-generated error hierarchy, as separate classes) to a CallFailure.
 * Matches by class, never by error name; the classes are passed in so one
 * function serves both SDKs.
 */
import { classifyHttpStatus, classifyTimeout, classifyTransportError, errorChain, type HeaderSource } from './classify';
import type { CallDeadline } from './call-deadline';
import type { CallFailure } from './types';

type ErrorClass = abstract new (...args: never[]) => Error;

/** The four classes of an SDK's error module that classification tells apart. */
export interface SdkErrorClasses {
  readonly APIError: ErrorClass;
  readonly APIConnectionError: ErrorClass;
  readonly APIConnectionTimeoutError: ErrorClass;
  readonly APIUserAbortError: ErrorClass;
}

/**
 * Classifies an error thrown by one SDK call made under `deadline`.
 * Order matters: an HTTP answer is the best evidence; then our deadline or the
 * caller's abort (the SDK reports both as a user abort); then the SDK's own
 * timeout; then the transport error in the connection error's cause chain.
 */
export function classifySdkError(
  error: unknown,
  classes: SdkErrorClasses,
  deadline: CallDeadline,
  nowMs: number,
): CallFailure {
  const status = httpStatusOf(error, classes);
  if (status !== undefined) {
    const { headers } = error as { headers?: HeaderSource };
    return classifyHttpStatus(status, { headers, message: apiMessageOf(error, status), nowMs });
  }
  if (deadline.expired()) return classifyTimeout(`no answer within ${deadline.timeoutMs} ms`);
  if (deadline.callerAborted()) return classifyTimeout('aborted by the caller; the request may have been sent');
  if (error instanceof classes.APIConnectionTimeoutError) {
    return classifyTimeout(`no answer within ${deadline.timeoutMs} ms (SDK timeout)`);
  }
  if (error instanceof classes.APIUserAbortError) return classifyTimeout('aborted; the request may have been sent');
  if (error instanceof classes.APIConnectionError) return classifyTransportError(error.cause);
  if (error instanceof SyntaxError) {
    // A 2xx whose JSON does not parse: the provider answered, so it may have executed.
    return { outcome: 'unknown', class: 'server_error', detail: `unparseable response body: ${error.message}` };
  }
  // Fetch reports aborts as DOMExceptions, which have no class of their own: the spec fixes these names.
  if (errorChain(error).some((link) => link.name === 'AbortError' || link.name === 'TimeoutError')) {
    return classifyTimeout(`aborted while reading the answer: ${String(error)}`);
  }
  // Anything else (a body stream cut mid-read, an SDK surprise): maybe executed.
  return classifyTransportError(error);
}

function httpStatusOf(error: unknown, classes: SdkErrorClasses): number | undefined {
  if (!(error instanceof classes.APIError)) return undefined;
  const { status } = error as { status?: unknown };
  return typeof status === 'number' ? status : undefined;
}

// OpenAI keeps the body's `error` object in `error`; Anthropic keeps the whole
// body there and its message in `apiMessage`. Else the SDK's "<status> <text>".
function apiMessageOf(error: unknown, status: number): string {
  const record = error as { apiMessage?: unknown; error?: { message?: unknown }; message?: unknown };
  if (typeof record.apiMessage === 'string' && record.apiMessage !== '') return record.apiMessage;
  if (typeof record.error?.message === 'string' && record.error.message !== '') return record.error.message;
  const message = typeof record.message === 'string' ? record.message : '';
  return message.startsWith(`${status} `) ? message.slice(`${status} `.length) : message;
}

import type { PerformResult } from './types';

/** What an answer other than "done" can mean for an effect. */
export type FailureKind = Exclude<PerformResult['kind'], 'done'>;
export type FailureResult = Exclude<PerformResult, { kind: 'done' }>;

/**
 * What a non-2xx answer of an HTTP downstream means when nothing else is
 * declared. Only 429 says the request was turned away before it was
 * processed; 408, 409 (same key in flight) and every 5xx may come from a proxy
 * after the service acted, so they are ambiguous (DESIGN.md treats
 * 502/503/504 as maybe executed). A 3xx (never followed: downstream-fetch.ts)
 * proves nothing either way: a downstream may answer a repeated key, or a
 * create, with 303 See Other, having acted. Other 4xx are a definite no.
 */
export function defaultFailureKind(status: number): FailureKind {
  if (status === 429) return 'not_performed';
  if (status === 408 || status === 409 || status >= 500 || (status >= 300 && status <= 399)) return 'ambiguous';
  return 'rejected';
}

/** The class of an ambiguous answer, by its status. */
function ambiguousClass(status: number): string {
  if (status >= 500) return 'server_error';
  if (status >= 300 && status <= 399) return 'redirect';
  return status === 408 || status === 409 ? 'in_flight' : 'uncertain';
}

/**
 * The result of an answer whose kind is known, with its class; "not performed"
 * carries the wait its Retry-After asks for (delta-seconds or an HTTP date).
 */
export function statusFailure(kind: FailureKind, status: number, retryAfter: string | null, nowMs = Date.now()): FailureResult {
  const detail = `downstream answered ${status}`;
  switch (kind) {
    case 'not_performed': {
      const retryAfterMs = parseRetryAfterMs(retryAfter, nowMs);
      return { kind, class: status === 429 ? 'rate_limited' : 'unavailable', detail, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
    }
    case 'ambiguous':
      return { kind, class: ambiguousClass(status), detail: status >= 300 && status <= 399 ? `${detail} (a redirect, not followed)` : detail };
    case 'rejected':
      return { kind, class: status === 401 || status === 403 ? 'unauthorized' : 'rejected', detail };
  }
}

/** What an HTTP downstream's non-2xx answer means for an effect, by the defaults above. */
export function classifyDownstreamStatus(status: number, retryAfter: string | null): FailureResult {
  return statusFailure(defaultFailureKind(status), status, retryAfter);
}

/** Retry-After as milliseconds to wait: delta-seconds, or an HTTP date still ahead; undefined otherwise. */
export function parseRetryAfterMs(retryAfter: string | null, nowMs = Date.now()): number | undefined {
  if (retryAfter === null || retryAfter.trim() === '') return undefined;
  const seconds = Number(retryAfter);
  if (Number.isFinite(seconds)) return seconds > 0 ? seconds * 1000 : undefined;
  const atMs = Date.parse(retryAfter);
  return Number.isFinite(atMs) && atMs > nowMs ? atMs - nowMs : undefined;
}

/** A transport failure: a URL fetch cannot parse is a definite no, refused at connect a definite "not performed"; anything later may have been. */
export function classifyTransportFailure(err: unknown): FailureResult {
  const codes: string[] = [];
  for (let e: unknown = err; e && typeof e === 'object' && codes.length < 5; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
  }
  const detail = `${(err as Error).message ?? String(err)}${codes.length ? ` (${codes.join(', ')})` : ''}`;
  // fetch could not parse the URL: nothing left, and nothing will on another try.
  if (codes.includes('ERR_INVALID_URL')) return { kind: 'rejected', class: 'invalid_url', detail };
  if (codes.some((code) => code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')) return { kind: 'not_performed', class: 'refused', detail };
  if ((err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError') return { kind: 'ambiguous', class: 'timeout', detail };
  return { kind: 'ambiguous', class: 'connection_lost', detail };
}

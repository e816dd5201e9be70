import type { PerformResult } from './types';

/**
 * What an HTTP downstream's answer means for an effect. Only 429 says the
 * request was turned away before it was processed; 408, 409 (same key in
 * flight) and every 5xx may come from a proxy after the service acted, so they
 * are ambiguous (DESIGN.md treats 502/503/504 as maybe executed); other 4xx are
 * a definite no.
 */
export function classifyDownstreamStatus(status: number, retryAfter: string | null): Exclude<PerformResult, { kind: 'done' }> {
  const detail = `downstream answered ${status}`;
  if (status === 429) {
    const seconds = Number(retryAfter);
    return { kind: 'not_performed', class: 'rate_limited', detail, ...(Number.isFinite(seconds) && seconds > 0 ? { retryAfterMs: seconds * 1000 } : {}) };
  }
  if (status === 408 || status === 409 || status >= 500) return { kind: 'ambiguous', class: status >= 500 ? 'server_error' : 'in_flight', detail };
  return { kind: 'rejected', class: status === 401 || status === 403 ? 'unauthorized' : 'rejected', detail };
}

/** A transport failure: refused at connect is a definite "not performed"; anything later may have been. */
export function classifyTransportFailure(err: unknown): Exclude<PerformResult, { kind: 'done' }> {
  const codes: string[] = [];
  for (let e: unknown = err; e && typeof e === 'object' && codes.length < 5; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
  }
  const detail = `${(err as Error).message ?? String(err)}${codes.length ? ` (${codes.join(', ')})` : ''}`;
  if (codes.some((code) => code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')) return { kind: 'not_performed', class: 'refused', detail };
  if ((err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError') return { kind: 'ambiguous', class: 'timeout', detail };
  return { kind: 'ambiguous', class: 'connection_lost', detail };
}

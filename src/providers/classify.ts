/**
 * What happened to a provider call, mapped to DESIGN.md's attempt outcomes:
 * `failed` only with proof that the provider never executed the request,
 * `unknown` whenever it may have. Pure functions: no I/O, the clock is a parameter.
 */
import type { CallFailure } from './types';

/** Response headers as the SDKs (`Headers`) or node:http (a plain record) hold them. */
export type HeaderSource =
  | { get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * Error codes meaning the request never left this machine: no connection was
 * made or the host name did not resolve, so nothing was sent.
 */
const NOT_SENT_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Codes that prove nothing was sent only when the failing syscall is `connect`
 * (on an established socket they can follow a sent request).
 */
const NOT_CONNECTED_CODES: ReadonlySet<string> = new Set(['EHOSTUNREACH', 'ENETUNREACH']);

/** Statuses saying the request was malformed or unacceptable as sent. */
const BAD_REQUEST_STATUSES: ReadonlySet<number> = new Set([400, 404, 413, 422]);
const UNAUTHORIZED_STATUSES: ReadonlySet<number> = new Set([401, 403]);
const BAD_GATEWAY_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

/**
 * Classifies an HTTP error status the provider answered with.
 * `failed` only for 4xx that say the request was not acted upon; 408, 409 (with
 * an idempotency key, "a request with this key is in progress": it may well
 * execute) and every 5xx (500 included: the provider may have executed before
 * failing) are `unknown`,
 * and so is anything outside 400-599 (a redirect or an odd status proves nothing).
 * `nowMs` only matters for an HTTP-date `retry-after`.
 */
export function classifyHttpStatus(
  status: number,
  options: { headers?: HeaderSource; message?: string; nowMs?: number } = {},
): CallFailure {
  const detail = options.message ? `HTTP ${status}: ${options.message}` : `HTTP ${status}`;
  if (status === 429) {
    const retryAfterMs =
      options.headers === undefined ? undefined : parseRetryAfterMs(options.headers, options.nowMs ?? Date.now());
    return {
      outcome: 'failed',
      class: 'rate_limited',
      detail,
      httpStatus: status,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  }
  if (BAD_REQUEST_STATUSES.has(status)) return { outcome: 'failed', class: 'bad_request', detail, httpStatus: status };
  if (UNAUTHORIZED_STATUSES.has(status)) return { outcome: 'failed', class: 'unauthorized', detail, httpStatus: status };
  if (status === 408) return { outcome: 'unknown', class: 'timeout', detail, httpStatus: status };
  if (status === 409) return { outcome: 'unknown', class: 'in_flight', detail, httpStatus: status };
  if (status >= 400 && status < 500) return { outcome: 'failed', class: 'rejected', detail, httpStatus: status };
  if (BAD_GATEWAY_STATUSES.has(status)) return { outcome: 'unknown', class: 'bad_gateway', detail, httpStatus: status };
  return { outcome: 'unknown', class: 'server_error', detail, httpStatus: status };
}

/**
 * The wait a 429 asks for, in milliseconds: `retry-after-ms` first (a
 * non-standard header some APIs send), else `retry-after` as delta-seconds or
 * as an HTTP date relative to `nowMs` (a date in the past gives 0).
 * Undefined when absent or unparseable.
 */
export function parseRetryAfterMs(headers: HeaderSource, nowMs: number): number | undefined {
  const millis = headerValue(headers, 'retry-after-ms');
  if (millis !== undefined && /^\d+(\.\d+)?$/.test(millis)) return Math.ceil(Number(millis));

  const retryAfter = headerValue(headers, 'retry-after');
  if (retryAfter === undefined) return undefined;
  if (/^\d+(\.\d+)?$/.test(retryAfter)) return Math.ceil(Number(retryAfter) * 1000);
  // An HTTP date names its weekday and month; this also keeps Date.parse from reading "-5" as a year.
  const dateMs = /[A-Za-z]/.test(retryAfter) ? Date.parse(retryAfter) : Number.NaN;
  if (Number.isNaN(dateMs)) return undefined;
  return Math.max(0, dateMs - nowMs);
}

/**
 * Classifies a transport error (no HTTP answer): `failed` (`refused`) when the
 * error chain proves no connection was made — ECONNREFUSED, ENOTFOUND,
 * EAI_AGAIN, or EHOSTUNREACH/ENETUNREACH from `connect` — otherwise `unknown`
 * (`connection_lost`): a reset or closed socket may come after the provider
 * read, and acted on, the request.
 */
export function classifyTransportError(error: unknown): CallFailure {
  const causes = errorChain(error);
  const proof = causes.find(
    (cause) =>
      (cause.code !== undefined && NOT_SENT_CODES.has(cause.code)) ||
      (cause.code !== undefined && NOT_CONNECTED_CODES.has(cause.code) && cause.syscall === 'connect'),
  );
  if (proof) {
    return { outcome: 'failed', class: 'refused', detail: `nothing sent: ${proof.message || proof.code}` };
  }
  const deepest = causes[causes.length - 1];
  const detail = deepest === undefined ? 'connection failed' : describeCause(deepest);
  return { outcome: 'unknown', class: 'connection_lost', detail: `connection lost after sending: ${detail}` };
}

/** Our own deadline passed, or the caller aborted, after the request may have been sent. */
export function classifyTimeout(detail: string): CallFailure {
  return { outcome: 'unknown', class: 'timeout', detail };
}

/** One link of an error's cause chain, as far as classification cares. */
export interface ErrorLink {
  readonly name: string;
  readonly message: string;
  readonly code?: string;
  readonly syscall?: string;
}

/**
 * Flattens an error, its `cause` chain and any `AggregateError.errors` (Node's
 * happy-eyeballs connect reports one error per address) into a list, outermost first.
 * Stops at depth 10 to survive cycles.
 */
export function errorChain(error: unknown): ErrorLink[] {
  const links: ErrorLink[] = [];
  const seen = new Set<unknown>();
  const visit = (value: unknown, depth: number): void => {
    if (depth > 10 || typeof value !== 'object' || value === null || seen.has(value)) return;
    seen.add(value);
    const record = value as { name?: unknown; message?: unknown; code?: unknown; syscall?: unknown };
    links.push({
      name: typeof record.name === 'string' ? record.name : 'Error',
      message: typeof record.message === 'string' ? record.message : '',
      ...(typeof record.code === 'string' ? { code: record.code } : {}),
      ...(typeof record.syscall === 'string' ? { syscall: record.syscall } : {}),
    });
    const nested = (value as { errors?: unknown }).errors;
    if (Array.isArray(nested)) for (const inner of nested) visit(inner, depth + 1);
    visit((value as { cause?: unknown }).cause, depth + 1);
  };
  visit(error, 0);
  return links;
}

function describeCause(link: ErrorLink): string {
  if (link.code !== undefined && !link.message.includes(link.code)) return `${link.message} (${link.code})`;
  return link.message || link.name;
}

function headerValue(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    const value = (headers as { get(name: string): string | null }).get(name);
    return value === null ? undefined : value.trim();
  }
  const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  const key = Object.keys(record).find((candidate) => candidate.toLowerCase() === name);
  const raw = key === undefined ? undefined : record[key];
  const value = typeof raw === 'string' ? raw : raw?.[0];
  return value?.trim();
}

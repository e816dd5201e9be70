import { OnceflowApiError, OnceflowUnavailableError } from './errors.js';
import type { Problem } from './job.js';

/** How failed tries are repeated. Every retry carries the same request, Idempotency-Key included. */
export interface RetryPolicy {
  /** Retries after the first try. */
  maxRetries: number;
  /** The first backoff; it doubles each retry, with full jitter. */
  backoffMs: number;
  /** Upper bound of one backoff (a Retry-After is honoured as given). */
  maxBackoffMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxRetries: 4, backoffMs: 200, maxBackoffMs: 5_000 };

/**
 * Answers after which the same request may succeed: a timeout (408), a limit
 * (429) and a server's failure (5xx), retried on the same key, which makes a
 * retry safe whatever the first request did. Not a 501 or a 505: the server
 * says it will never take such a request.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599 && status !== 501 && status !== 505);
}

/** Waits `ms`; rejects with the signal's reason as soon as it aborts. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const sleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Full jitter: a random wait between 0 and the doubled backoff, capped. */
export function backoffDelayMs(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(policy.maxBackoffMs, policy.backoffMs * 2 ** retry));
}

/** Milliseconds a Retry-After header asks for (delta-seconds or an HTTP date), or undefined when it says nothing usable. */
export function retryAfterMs(header: string | null, nowMs: number): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const atMs = Date.parse(value);
  return Number.isNaN(atMs) ? undefined : Math.max(0, atMs - nowMs);
}

/** A try that took longer than its timeout: maybe the server acted on it, so it is retried on the same key. */
export class RequestTimeoutError extends Error {
  override name = 'RequestTimeoutError';

  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
  }
}

/** A successful answer, its JSON body parsed. */
export interface HttpAnswer {
  status: number;
  headers: Headers;
  body: unknown;
}

export interface HttpSenderOptions {
  baseUrl: string;
  apiKey: string;
  fetch?: typeof fetch;
  sleep?: Sleep;
  /** For the jitter; Math.random by default. */
  random?: () => number;
  now?: () => number;
  retry?: Partial<RetryPolicy>;
}

export interface SendOptions {
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /** Per try; a try that takes longer is abandoned and retried. */
  timeoutMs?: number;
  /** Sent once, never retried (a repeat could only be told the first one landed). */
  once?: boolean;
}

/**
 * Sends requests to the Onceflow API with retries: network failures, tries
 * that time out, and the statuses isRetryableStatus names are retried with backoff and
 * jitter, honouring Retry-After; every other error answer is thrown at once.
 */
export class HttpSender {
  private readonly baseUrl: string;
  private readonly fetch: typeof fetch;
  private readonly sleep: Sleep;
  private readonly random: () => number;
  private readonly now: () => number;
  private readonly policy: RetryPolicy;

  constructor(private readonly options: HttpSenderOptions) {
    this.baseUrl = options.baseUrl.replace(/\/$/, '');
    // Called unbound: a browser's fetch refuses any `this` but the window.
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.sleep = options.sleep ?? sleep;
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
    const retry = options.retry ?? {};
    this.policy = {
      maxRetries: retry.maxRetries ?? DEFAULT_RETRY_POLICY.maxRetries,
      backoffMs: retry.backoffMs ?? DEFAULT_RETRY_POLICY.backoffMs,
      maxBackoffMs: retry.maxBackoffMs ?? DEFAULT_RETRY_POLICY.maxBackoffMs,
    };
  }

  /**
   * Sends one request, retrying what may pass later.
   * @throws OnceflowApiError for an error answer retrying will not fix (4xx but 408 and 429, 501, 505).
   * @throws OnceflowUnavailableError when retries run out.
   * @throws the signal's reason when it aborts.
   */
  async send(method: string, path: string, opts: SendOptions = {}): Promise<HttpAnswer> {
    const maxRetries = opts.once ? 0 : this.policy.maxRetries;
    let lastFailure: unknown;
    for (let retry = 0; ; retry++) {
      opts.signal?.throwIfAborted();
      let waitMs: number | undefined;
      try {
        const answer = await this.tryOnce(method, path, opts);
        if (answer.status >= 200 && answer.status < 300) return answer;
        const error = new OnceflowApiError(answer.status, problemOf(answer));
        if (!isRetryableStatus(answer.status)) throw error;
        lastFailure = error;
        waitMs = retryAfterMs(answer.headers.get('retry-after'), this.now());
      } catch (err) {
        // Retryable answers are not thrown: an error answer here is one retrying will not fix.
        if (err instanceof OnceflowApiError) throw err;
        if (opts.signal?.aborted) throw opts.signal.reason;
        lastFailure = err;
      }
      if (retry >= maxRetries) throw new OnceflowUnavailableError(`${method} ${path} failed after ${retry + 1} tries`, { cause: lastFailure });
      await this.sleep(waitMs ?? backoffDelayMs(retry, this.policy, this.random), opts.signal);
    }
  }

  private async tryOnce(method: string, path: string, opts: SendOptions): Promise<HttpAnswer> {
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(opts.signal?.reason);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = opts.timeoutMs === undefined ? undefined : setTimeout(() => controller.abort(new RequestTimeoutError(opts.timeoutMs!)), opts.timeoutMs);
    try {
      const response = await this.fetch(`${this.baseUrl}${path}`, {
        method,
        headers: { ...opts.headers, authorization: `Bearer ${this.options.apiKey}` },
        body: opts.body,
        signal: controller.signal,
      });
      // Read inside the try: a connection cut in the middle of the body is a failed try like any other.
      const text = await response.text();
      let body: unknown;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch (err) {
        // A truncated success is a lost answer; an error answer that is not JSON is still an error answer.
        if (response.ok) throw err;
      }
      return { status: response.status, headers: response.headers, body };
    } catch (err) {
      throw controller.signal.aborted && !opts.signal?.aborted ? controller.signal.reason : err;
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
  }
}

function problemOf(answer: HttpAnswer): Problem {
  const body = answer.body as Partial<Problem> | undefined;
  if (body && typeof body === 'object' && typeof body.title === 'string') return { detail: '', type: 'about:blank', status: answer.status, ...body } as Problem;
  return { type: 'about:blank', title: `HTTP ${answer.status}`, status: answer.status, detail: '' };
}

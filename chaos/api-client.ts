/**
 * The suite's HTTP client, acting as a real client would: network errors,
 * 5xx and 429 are retried with the same Idempotency-Key. Every exchange is
 * recorded with its time, so the checks can tell a 5xx while the API or its
 * database was down from one that was not.
 */
export interface Exchange {
  label: string;
  method: string;
  path: string;
  startedAt: number;
  endedAt: number;
  /** 0 for a network error (no HTTP answer). */
  status: number;
  replayed: boolean;
  body?: unknown;
  error?: string;
}

export interface RequestOptions {
  label: string;
  token: string;
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class ApiClient {
  readonly exchanges: Exchange[] = [];

  constructor(private readonly baseUrl: string) {}

  /** One request, recorded; never throws. */
  async request(method: string, path: string, options: RequestOptions): Promise<Exchange> {
    const startedAt = Date.now();
    const exchange: Exchange = { label: options.label, method, path, startedAt, endedAt: startedAt, status: 0, replayed: false };
    try {
      const response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${options.token}`,
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...options.headers,
        },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: AbortSignal.timeout(options.timeoutMs ?? 20_000),
      });
      exchange.status = response.status;
      exchange.replayed = response.headers.get('idempotent-replayed') === 'true';
      const text = await response.text();
      try {
        exchange.body = text ? JSON.parse(text) : undefined;
      } catch {
        exchange.body = text;
      }
    } catch (err) {
      exchange.status = 0;
      exchange.error = (err as Error).message ?? String(err);
    }
    exchange.endedAt = Date.now();
    this.exchanges.push(exchange);
    return exchange;
  }

  /**
   * Retries (same request, same key) after a network error, a 5xx or a 429,
   * with a capped exponential backoff, until another answer or the deadline.
   * @returns the last exchange.
   */
  async untilAnswered(method: string, path: string, options: RequestOptions & { deadline: number }): Promise<Exchange> {
    for (let retry = 0; ; retry++) {
      const exchange = await this.request(method, path, options);
      const retryable = exchange.status === 0 || exchange.status === 429 || exchange.status >= 500;
      if (!retryable || Date.now() > options.deadline) return exchange;
      await sleep(Math.min(1_000, 100 * 2 ** Math.min(retry, 4)) * (0.5 + Math.random() / 2));
    }
  }
}

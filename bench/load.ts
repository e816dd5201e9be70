import { Pool } from 'undici';
import { percentile } from './stats';

export interface LoadResult {
  /** Latency percentiles in milliseconds (sub-millisecond resolution). */
  p50: number;
  p99: number;
  /** Completed requests per second. */
  rps: number;
  count: number;
}

export interface LoadRequest {
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Status every answer must have. */
  expectStatus: number;
}


/**
 * A closed-loop load: `connections` clients over keep-alive connections, each
 * sending its next request when the last one is answered, for durationMs.
 * @throws Error on any answer with another status.
 */
export async function load(origin: string, request: LoadRequest | (() => LoadRequest), connections: number, durationMs: number): Promise<LoadResult> {
  const pool = new Pool(origin, { connections, pipelining: 1 });
  const latencies: number[] = [];
  const deadline = Date.now() + durationMs;
  const started = process.hrtime.bigint();
  try {
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (Date.now() < deadline) {
          const next = typeof request === 'function' ? request() : request;
          const t0 = process.hrtime.bigint();
          const response = await pool.request({ origin, method: next.method, path: next.path, headers: next.headers, body: next.body });
          await response.body.arrayBuffer();
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
          if (response.statusCode !== next.expectStatus) throw new Error(`${next.method} ${next.path}: ${response.statusCode}, expected ${next.expectStatus}`);
        }
      }),
    );
  } finally {
    await pool.close();
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), rps: latencies.length / seconds, count: latencies.length };
}

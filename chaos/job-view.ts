/** The job as the API shows it (API.md), as far as the suite reads it, and the polling that waits for a state. */
import type { ApiClient } from './api-client';

export interface AttemptView {
  id: string;
  seq: number;
  provider: string;
  status: string;
  error?: { class?: string };
}

export interface EffectView {
  name: string;
  key: string;
  status: string;
  receipt?: { messageId?: string };
}

export interface JobView {
  id: string;
  status: string;
  workflowId: string;
  result?: Record<string, unknown>;
  error?: Record<string, unknown>;
  attempts: AttemptView[];
  effects: EffectView[];
}

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

export const isJobView = (body: unknown): body is JobView =>
  typeof body === 'object' && body !== null && typeof (body as JobView).id === 'string' && Array.isArray((body as JobView).attempts);

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Reads the job with the operator key; undefined when the API did not answer 200. */
export async function readJob(client: ApiClient, operatorKey: string, jobId: string, label = 'poll'): Promise<JobView | undefined> {
  const exchange = await client.request('GET', `/v1/jobs/${jobId}`, { label, token: operatorKey, timeoutMs: 5_000 });
  return exchange.status === 200 && isJobView(exchange.body) ? exchange.body : undefined;
}

export type WatchResult = { reached: true; job: JobView } | { reached: false; why: 'job ended first' | 'timed out'; job?: JobView };

/** Polls the job until `predicate` holds; gives up when it is terminal first or at the deadline. */
export async function watchJob(
  client: ApiClient,
  operatorKey: string,
  jobId: string,
  predicate: (job: JobView) => boolean,
  deadline: number,
  intervalMs = 25,
): Promise<WatchResult> {
  let last: JobView | undefined;
  while (Date.now() < deadline) {
    const job = await readJob(client, operatorKey, jobId);
    if (job) {
      last = job;
      if (predicate(job)) return { reached: true, job };
      if (TERMINAL.has(job.status)) return { reached: false, why: 'job ended first', job };
    }
    await sleep(intervalMs);
  }
  return { reached: false, why: 'timed out', ...(last ? { job: last } : {}) };
}

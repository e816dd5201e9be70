/**
 * Submitting a gateway intent as a client would: a burst of identical POSTs
 * with one Idempotency-Key, each retried after a network error, a 5xx or a
 * rate limit, but not after a spent budget (its Retry-After is the next UTC
 * day: the answer is final for the trial).
 */
import type { ApiClient, Exchange } from '../api-client';
import { sleep } from '../context';
import { messageOf, type IntentPlan } from './plan';

const SUBMIT_TIMEOUT_MS = 20_000;

export const isBudgetRefusal = (exchange: Exchange): boolean =>
  exchange.status === 429 && String((exchange.body as { type?: unknown } | undefined)?.type ?? '').endsWith('/budget-exhausted');

export function bodyOf(intent: IntentPlan, ticketId: string) {
  return { operation: intent.operation, input: { ticketId, message: messageOf(intent) } };
}

export interface SubmitTarget {
  client: ApiClient;
  token: string;
  /** Give up retrying after this (epoch ms). */
  deadline: number;
}

/** One POST, retried until it gets an answer that is not transient. */
export async function submitOnce(target: SubmitTarget, intent: IntentPlan, ticketId: string, label: string, requestDeadline?: number): Promise<Exchange> {
  for (let retry = 0; ; retry++) {
    const exchange = await target.client.request('POST', '/v1/jobs', {
      label,
      token: target.token,
      body: bodyOf(intent, ticketId),
      headers: { 'idempotency-key': intent.key, ...(requestDeadline !== undefined ? { 'request-deadline': new Date(requestDeadline).toISOString() } : {}) },
      timeoutMs: SUBMIT_TIMEOUT_MS,
    });
    const transient = exchange.status === 0 || exchange.status >= 500 || (exchange.status === 429 && !isBudgetRefusal(exchange));
    if (!transient || Date.now() > target.deadline) return exchange;
    await sleep(Math.min(1_000, 100 * 2 ** Math.min(retry, 4)) * (0.5 + Math.random() / 2));
  }
}

/** The intent's burst, all at once; @returns every final answer. */
export async function submitBurst(target: SubmitTarget, intent: IntentPlan, ticketId: string): Promise<Exchange[]> {
  // One deadline for the intent, as a client keeps it: every POST of the burst names the same instant.
  const requestDeadline = intent.deadlineAfterMs === undefined ? undefined : Date.now() + intent.deadlineAfterMs;
  return Promise.all(Array.from({ length: intent.burst }, () => submitOnce(target, intent, ticketId, `submit:${intent.key}`, requestDeadline)));
}

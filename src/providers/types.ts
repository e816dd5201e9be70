/**
 * What Onceflow needs of an AI provider: one completion per attempt, with the
 * attempt's id as the request's idempotency key, no hidden retries, and every
 * failure classified as provably-not-executed (`failed`) or maybe-executed
 * (`unknown`), per DESIGN.md's attempt-outcome table.
 */

import type { ProviderUsage } from './usage';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface CompletionRequest {
  model: string;
  messages: ChatMessage[];
  /** The attempt's id: sent as the Idempotency-Key (and request id) header. */
  requestId: string;
  /** The whole call's budget; past it the call is abandoned as `unknown` (timeout). */
  timeoutMs: number;
  temperature?: number;
  maxTokens?: number;
  signal?: AbortSignal;
}

export interface CompletionAnswer {
  /** The assistant's text, exactly as the provider returned it. */
  content: string;
  /** The provider's response body, for evidence. */
  raw: unknown;
  /** What the request consumed, when the provider said. */
  usage?: ProviderUsage;
}

/** Failure classes whose request provably never executed: a next attempt may start. */
export type FailedClass = 'refused' | 'rate_limited' | 'bad_request' | 'unauthorized' | 'rejected';
/** Failure classes whose request may have executed: the attempt is unknown. */
export type UnknownClass = 'timeout' | 'connection_lost' | 'bad_gateway' | 'server_error' | 'in_flight';

export type CallFailure =
  | { outcome: 'failed'; class: FailedClass; detail: string; httpStatus?: number; retryAfterMs?: number }
  | { outcome: 'unknown'; class: UnknownClass; detail: string; httpStatus?: number };

/** A provider call that did not produce an answer, with its classification. */
export class ProviderCallError extends Error {
  override name = 'ProviderCallError';
  constructor(readonly failure: CallFailure, options?: { cause?: unknown }) {
    super(`${failure.outcome} (${failure.class}): ${failure.detail}`, options);
  }
}

/** What a provider says, asked later, of a request id. */
export type LookupResult =
  | { found: false }
  | { found: true; status: 'executing' }
  | { found: true; status: 'completed'; content: string; raw: unknown; usage?: ProviderUsage };

export interface ProviderAdapter {
  readonly name: string;
  readonly kind: 'openai-compatible' | 'anthropic';
  /** Where requests go: a verification holds only for the endpoint it was made against. */
  readonly baseUrl?: string;
  /**
   * One completion, one HTTP request, no retries.
   * @throws ProviderCallError with the failure's classification.
   */
  complete(request: CompletionRequest): Promise<CompletionAnswer>;
  /**
   * Asks the provider what became of a request id, where the provider can say.
   * Absent when it cannot (reconciliation then rests on the ledger and operators).
   * @throws Error when the lookup itself fails (the attempt stays unknown).
   */
  lookup?(requestId: string): Promise<LookupResult>;
}

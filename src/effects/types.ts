import type { PoolClient } from 'pg';

/** What an effect may be called (the API's effect routes take only such names): `message.send`, `ticket.comment`. */
export const EFFECT_NAME_PATTERN = '^[a-z][a-z0-9]*([._-][a-z0-9]+)*$';
export const EFFECT_NAME_MAX_LENGTH = 64;

/** What an effect is performed with: the job, its winning output, and the downstream idempotency key. */
export interface EffectContext {
  jobId: string;
  operation: string;
  input: Record<string, unknown>;
  output: Record<string, unknown>;
  /** Sent downstream as the idempotency key: the same on every try. */
  key: string;
  signal?: AbortSignal;
}

/**
 * What a downstream said of one try:
 * - done: it happened; here is the receipt.
 * - rejected: it said no for good (4xx); it did not happen.
 * - not_performed: it said it did not do it this time (429, 503); trying again is fine.
 * - ambiguous: it may have happened (timeout, reset, 500, 502, 504); only a
 *   receipt lookup can tell.
 */
export type PerformResult =
  | { kind: 'done'; receipt: Record<string, unknown> }
  | { kind: 'rejected'; class: string; detail: string }
  | { kind: 'not_performed'; class: string; detail: string; retryAfterMs?: number }
  | { kind: 'ambiguous'; class: string; detail: string };

export type LookupResult = { found: true; receipt: Record<string, unknown> } | { found: false };

/** One probe of an effect's drills: the values a job would send it with. */
export interface EffectProbe {
  name: string;
  input: Record<string, unknown>;
  output: Record<string, unknown>;
}

/**
 * What an effect's claims are checked with (effects/verify/drills.ts): the
 * declaration and host a verification holds for, the probes, and the same
 * effect sent through another origin (the drills' fault proxy, or the
 * declaration's verify target).
 */
export interface VerifiableEffect {
  /** SHA-256 of the declaration as written (its ${ENV} names, not their values). */
  readonly declarationDigest: string;
  /** The host (and port) the effect sends to, where the verification holds. */
  readonly host: string;
  /** Where the drills send: the declaration's verify target, else its own origin. */
  readonly drillOrigin: string;
  readonly probes: readonly EffectProbe[];
  /** A probe the downstream must refuse with a 4xx (the classification drill), when declared. */
  readonly malformed?: EffectProbe;
  /** The same effect, its requests sent to `origin` instead (with the verify target's extra headers). */
  via(origin: string): EffectAdapter;
}

/** An effect adapter declares what it can do; the runner decides what may be done. */
export interface EffectAdapter {
  readonly name: string;
  /**
   * Performing it again with the same key cannot make a second effect (the
   * downstream deduplicates by key, or the write is transactional).
   */
  readonly repeatSafe: boolean;
  /** Performs the effect once (no retries inside). */
  perform?(context: EffectContext): Promise<PerformResult>;
  /**
   * For effects in the application's own database: the write, inside the
   * transaction that also settles the effect, so both commit or neither.
   */
  performInTransaction?(tx: PoolClient, context: EffectContext): Promise<Record<string, unknown>>;
  /**
   * Asks the downstream for the receipt of a key.
   * @throws Error when the lookup itself fails (nothing is concluded).
   */
  lookup?(key: string, context: EffectContext): Promise<LookupResult>;
  /** Its claims (a lookup, deduplication) can be checked by drills; absent for an effect with none to check. */
  readonly verifiable?: VerifiableEffect;
}

import type { ModelPrice } from '../providers/config';
import { prepared } from '../db/prepared';
import type { Queryable } from './queryable';

/**
 * What one attempt consumed, ready for the ledger: the provider's numbers
 * and the price they are billed at. The cost itself is computed by the
 * database in numeric, never here in floating point.
 */
export interface AttemptUsage {
  inputTokens: number;
  outputTokens: number;
  cachedTokens?: number;
  /** The model the provider says answered. */
  model?: string;
  providerRequestId?: string;
  latencyMs?: number;
  /** The route model's price; without one the tokens are recorded and the cost stays unknown. */
  price?: ModelPrice;
}

/** The usage of an attempt that sent nothing, or whose request the provider refused unexecuted: zeros, said explicitly. */
export const NOTHING_SENT: AttemptUsage = { inputTokens: 0, outputTokens: 0 };

/** What recording an attempt's usage wrote, as metrics count it: its tokens, and its cost as the database computed it (null: not known). */
export interface MeteredUsage {
  inputTokens: number;
  outputTokens: number;
  /** Numeric, as text: never a float. */
  cost: string | null;
  currency: string | null;
}

/**
 * Records an attempt's usage inside the caller's transaction, which writes
 * the attempt's outcome: the two are one fact. A usage already reported is
 * never rewritten (the first report stands; a second answer of the same
 * request costs nothing more).
 * @returns what this call recorded, or undefined when it recorded nothing.
 */
export async function recordUsageLocked(tx: Queryable, attemptId: string, usage: AttemptUsage): Promise<MeteredUsage | undefined> {
  const price = usage.price;
  // Invariant 13: usage is written once; nothing sent costs exactly 0, in any currency.
  const { rows } = await tx.query<{ input_tokens: string; output_tokens: string; cost: string | null; cost_currency: string | null }>(
    prepared(
      `UPDATE attempts SET usage_reported = true, input_tokens = $2, output_tokens = $3, cached_tokens = $4, model_used = $5,
            provider_request_id = $6, latency_ms = $7, cost_currency = $10,
            cost = CASE WHEN $2::bigint = 0 AND $3::bigint = 0 THEN 0
                        WHEN $8::numeric IS NULL OR $9::numeric IS NULL THEN NULL
                        ELSE trim_scale(($2::bigint * $8::numeric + $3::bigint * $9::numeric) / 1000000) END
     WHERE id = $1 AND NOT usage_reported
     RETURNING input_tokens, output_tokens, cost::text AS cost, cost_currency`,
      [
        attemptId,
        usage.inputTokens,
        usage.outputTokens,
        usage.cachedTokens ?? null,
        usage.model ?? null,
        usage.providerRequestId ?? null,
        usage.latencyMs === undefined ? null : Math.round(usage.latencyMs),
        price?.inputPerMillion ?? null,
        price?.outputPerMillion ?? null,
        price?.currency ?? null,
      ],
    ),
  );
  const row = rows[0];
  return row ? { inputTokens: Number(row.input_tokens), outputTokens: Number(row.output_tokens), cost: row.cost, currency: row.cost_currency } : undefined;
}

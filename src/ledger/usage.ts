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
  // Invariant 13: usage is written once; nothing sent costs exactly 0, in any currency (ledger_record_usage, migration 0023).
  const { rows } = await tx.query<UsageRow>(
    prepared('SELECT input_tokens, output_tokens, cost, cost_currency FROM ledger_record_usage($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)', [attemptId, ...usageArguments(usage)]),
  );
  return rows[0] ? toMeteredUsage(rows[0]) : undefined;
}

/** What ledger_record_usage returns (the ledger's commit of an answer returns it as a JSON object of the same names). */
export interface UsageRow {
  input_tokens: string | number;
  output_tokens: string | number;
  cost: string | null;
  cost_currency: string | null;
}

export function toMeteredUsage(row: UsageRow): MeteredUsage {
  return { inputTokens: Number(row.input_tokens), outputTokens: Number(row.output_tokens), cost: row.cost, currency: row.cost_currency };
}

/** An attempt's usage as ledger_record_usage's arguments after the attempt's id, in their order. */
export function usageArguments(usage: AttemptUsage): unknown[] {
  const price = usage.price;
  return [
    usage.inputTokens,
    usage.outputTokens,
    usage.cachedTokens ?? null,
    usage.model ?? null,
    usage.providerRequestId ?? null,
    usage.latencyMs === undefined ? null : Math.round(usage.latencyMs),
    price?.inputPerMillion ?? null,
    price?.outputPerMillion ?? null,
    price?.currency ?? null,
  ];
}

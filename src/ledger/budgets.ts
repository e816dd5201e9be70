import type { BudgetConfig } from '../config';
import type { Queryable } from './queryable';

/** Which daily budget a principal has used up, if any. */
export type SpentBudget = 'cost' | 'tokens';

/**
 * Whether a principal has used up a daily budget, by its spending since
 * `dayStart` (migration 0018's view: settlements and what was learned after
 * them, never what a process believed). The cost budget limits what is
 * billable, or what the provider was paid (failed jobs and lost attempts
 * too, under any billing policy), as `budget.measure` says; the token budget
 * counts every attempt's tokens. Jobs still in flight are not counted yet: a
 * burst of new intents may overshoot by them.
 */
export async function spentBudget(db: Queryable, principalId: string, budget: BudgetConfig, dayStart: Date): Promise<SpentBudget | undefined> {
  if (budget.costPerDay === undefined && budget.tokensPerDay === undefined) return undefined;
  // Only the budget's currency counts toward a cost budget: currencies are never added together.
  const { rows } = await db.query<{ cost_spent: boolean | null; tokens_spent: boolean | null }>(
    `SELECT COALESCE(sum(${budget.measure === 'provider_cost' ? 'provider_cost' : 'billable'}) FILTER (WHERE currency = $3), 0) >= $4::numeric AS cost_spent,
            COALESCE(sum(input_tokens + output_tokens), 0) >= $5::bigint AS tokens_spent
       FROM spending
      WHERE principal_id = $1 AND at >= $2`,
    [principalId, dayStart, budget.currency, budget.costPerDay ?? null, budget.tokensPerDay ?? null],
  );
  if (rows[0]?.cost_spent) return 'cost';
  if (rows[0]?.tokens_spent) return 'tokens';
  return undefined;
}

/** The start of the UTC day `now` falls in, and of the next one (when budgets reset). */
export function utcDay(now: Date): { start: Date; next: Date } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  return { start, next: new Date(start.getTime() + 24 * 60 * 60 * 1000) };
}

import type { Queryable } from './queryable';

/** How a usage report groups spending. */
export const UsageGrouping = { operation: 'operation', day: 'day' } as const;
export type UsageGrouping = (typeof UsageGrouping)[keyof typeof UsageGrouping];

/** One line of a usage report: one group in one currency. Money stays a decimal string. */
export interface UsageLine {
  /** The operation, or the UTC day (YYYY-MM-DD) a bill was settled or an adjustment learned on. */
  key: string;
  /** Null for jobs that cost nothing priced (e.g. cancelled before an attempt). */
  currency: string | null;
  /** The jobs billed in this group (a reopened job once; an adjustment, or a cost in another currency, adds no job). */
  jobs: number;
  inputTokens: number;
  outputTokens: number;
  providerCost: string;
  billable: string;
}

/**
 * A principal's totals in [from, to) from the one account of spending
 * (migration 0018's view: each run's settlement, plus what was learned after
 * it), per group and currency: amounts in two currencies are never added
 * together.
 */
export async function usageReport(db: Queryable, query: { principalId: string; from: Date; to: Date; groupBy: UsageGrouping }): Promise<UsageLine[]> {
  const key = query.groupBy === UsageGrouping.day ? `to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD')` : 'operation';
  const { rows } = await db.query<{ key: string; currency: string | null; jobs: number; input_tokens: string; output_tokens: string; provider_cost: string; billable: string }>(
    `SELECT ${key} AS key, currency, count(DISTINCT job_id) FILTER (WHERE bills = 1)::int AS jobs, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
            sum(provider_cost)::text AS provider_cost, sum(billable)::text AS billable
       FROM spending
      WHERE principal_id = $1 AND at >= $2 AND at < $3
      GROUP BY 1, 2
      ORDER BY 1, 2 NULLS FIRST`,
    [query.principalId, query.from, query.to],
  );
  return rows.map((row) => ({
    key: row.key,
    currency: row.currency,
    jobs: row.jobs,
    inputTokens: Number(row.input_tokens),
    outputTokens: Number(row.output_tokens),
    providerCost: row.provider_cost,
    billable: row.billable,
  }));
}

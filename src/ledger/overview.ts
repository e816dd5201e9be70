import { JobStatus } from '../jobs/status';
import type { Queryable } from './queryable';

/**
 * The console's overview, from the ledger rows the counters of /metrics
 * count as they are written (jobs, attempts, effects, settlements): the same
 * facts, but over any window and across restarts of the processes.
 */

export interface JobsPerHour {
  /** The start of the hour (UTC). */
  hour: Date;
  status: JobStatus;
  jobs: number;
}

/**
 * Jobs created per hour since `since`, by the status they have now: every
 * status named, so that jobs_status_created_idx (status, created_at, id)
 * serves it as one range per status, read from the index alone.
 */
export async function jobsPerHour(db: Queryable, since: Date): Promise<JobsPerHour[]> {
  const { rows } = await db.query<{ hour: Date; status: JobStatus; jobs: number }>(
    `SELECT date_bin('1 hour', created_at, $1::timestamptz) AS hour, status, count(*)::int AS jobs
       FROM jobs
      WHERE status = ANY($2::text[]) AND created_at >= $1
      GROUP BY 1, 2
      ORDER BY 1, 2`,
    [since, Object.values(JobStatus)],
  );
  return rows;
}

export interface AttemptOutcomeCount {
  status: string;
  /** The error class of failed and unknown attempts ('' for none). */
  errorClass: string;
  attempts: number;
}

/** Attempts started since `since`, by status and error class. */
export async function attemptsByOutcome(db: Queryable, since: Date): Promise<AttemptOutcomeCount[]> {
  const { rows } = await db.query<{ status: string; error_class: string; attempts: number }>(
    `SELECT status, COALESCE(error_class, '') AS error_class, count(*)::int AS attempts
       FROM attempts WHERE started_at >= $1
      GROUP BY 1, 2 ORDER BY 3 DESC`,
    [since],
  );
  return rows.map((row) => ({ status: row.status, errorClass: row.error_class, attempts: row.attempts }));
}

/** Effects claimed since `since`, by effect and status. */
export async function effectsByStatus(db: Queryable, since: Date): Promise<Array<{ name: string; status: string; effects: number }>> {
  const { rows } = await db.query<{ name: string; status: string; effects: number }>(
    `SELECT name, status, count(*)::int AS effects FROM effects WHERE created_at >= $1 GROUP BY 1, 2 ORDER BY 1, 2`,
    [since],
  );
  return rows;
}

export interface OperationCost {
  operation: string;
  currency: string | null;
  jobs: number;
  /** Decimals as the ledger holds them. */
  providerCost: string;
  billable: string;
  inputTokens: number;
  outputTokens: number;
}

/**
 * What was spent since `since`, per operation and currency, from the one
 * account of spending (settlements and later adjustments, as /v1/usage and
 * the budgets read it); amounts in two currencies are never added.
 */
export async function costByOperation(db: Queryable, since: Date): Promise<OperationCost[]> {
  const { rows } = await db.query<{ operation: string; currency: string | null; jobs: number; provider_cost: string; billable: string; input_tokens: string; output_tokens: string }>(
    `SELECT operation, currency, sum(bills)::int AS jobs, sum(provider_cost)::text AS provider_cost, sum(billable)::text AS billable,
            sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens
       FROM spending WHERE at >= $1
      GROUP BY 1, 2 ORDER BY 1, 2 NULLS FIRST`,
    [since],
  );
  return rows.map((row) => ({
    operation: row.operation,
    currency: row.currency,
    jobs: row.jobs,
    providerCost: row.provider_cost,
    billable: row.billable,
    inputTokens: Number(row.input_tokens),
    outputTokens: Number(row.output_tokens),
  }));
}

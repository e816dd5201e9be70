import { JobEventType } from './events';
import type { Queryable } from './queryable';

/** A job waiting in awaiting_resolution: its unknown attempt is why. */
export interface AwaitingJob {
  jobId: string;
  principalId: string;
  operation: string;
  idempotencyKey: string;
  createdAt: Date;
  /** When the job began to wait (its awaiting_resolution event). */
  waitingSince: Date;
  attempt: {
    id: string;
    seq: number;
    provider: string;
    model: string;
    startedAt: Date;
    errorClass: string | null;
    errorDetail: string | null;
    evidence: Record<string, unknown> | null;
  } | null;
}

/** An effect waiting in needs_review: what it tried and what the downstream said. */
export interface EffectInReview {
  jobId: string;
  name: string;
  principalId: string;
  operation: string;
  idempotencyKey: string;
  jobCreatedAt: Date;
  /** When it went to review (its settlement into needs_review). */
  waitingSince: Date;
  error: Record<string, unknown> | null;
  tries: number;
  owners: number;
  lookupFailures: number;
}

interface AwaitingRow {
  id: string;
  principal_id: string;
  operation: string;
  idempotency_key: string;
  created_at: Date;
  waiting_since: Date;
  attempt_id: string | null;
  seq: number | null;
  provider: string | null;
  model: string | null;
  started_at: Date | null;
  error_class: string | null;
  error_detail: string | null;
  evidence: Record<string, unknown> | null;
}

/**
 * Jobs in awaiting_resolution, oldest first, each with its unknown attempt.
 * Read through jobs_status_created_idx (status, created_at, id); the attempt
 * through attempts_one_live_per_lane (live attempts only), the wait through
 * job_events_job_id_idx: a page costs its own rows, whatever the table holds.
 */
export async function awaitingJobs(db: Queryable, limit: number): Promise<AwaitingJob[]> {
  const { rows } = await db.query<AwaitingRow>(
    `SELECT j.id, j.principal_id, j.operation, j.idempotency_key, j.created_at,
            COALESCE((SELECT max(e.created_at) FROM job_events e WHERE e.job_id = j.id AND e.type = $2), j.updated_at) AS waiting_since,
            a.id AS attempt_id, a.seq, a.provider, a.model, a.started_at, a.error_class, a.error_detail, a.evidence
       FROM jobs j
       LEFT JOIN LATERAL (
         SELECT * FROM attempts a WHERE a.job_id = j.id AND a.status = 'unknown' ORDER BY a.seq LIMIT 1
       ) a ON true
      WHERE j.status = 'awaiting_resolution'
      ORDER BY j.created_at, j.id
      LIMIT $1`,
    [limit, JobEventType.awaitingResolution],
  );
  return rows.map((row) => ({
    jobId: row.id,
    principalId: row.principal_id,
    operation: row.operation,
    idempotencyKey: row.idempotency_key,
    createdAt: row.created_at,
    waitingSince: row.waiting_since,
    attempt: row.attempt_id
      ? {
          id: row.attempt_id,
          seq: row.seq!,
          provider: row.provider!,
          model: row.model!,
          startedAt: row.started_at!,
          errorClass: row.error_class,
          errorDetail: row.error_detail,
          evidence: row.evidence,
        }
      : null,
  }));
}

interface ReviewRow {
  job_id: string;
  name: string;
  principal_id: string;
  operation: string;
  idempotency_key: string;
  job_created_at: Date;
  waiting_since: Date;
  error: Record<string, unknown> | null;
  tries: number;
  owners: number;
  lookup_failures: number;
}

/**
 * Effects in needs_review, longest waiting first. Read through
 * effects_needs_review_idx (partial: only effects in review are in it), each
 * job by its primary key.
 */
export async function effectsInReview(db: Queryable, limit: number): Promise<EffectInReview[]> {
  const { rows } = await db.query<ReviewRow>(
    `SELECT e.job_id, e.name, j.principal_id, j.operation, j.idempotency_key, j.created_at AS job_created_at,
            COALESCE(e.settled_at, e.updated_at) AS waiting_since, e.error, e.tries, e.owners, e.lookup_failures
       FROM effects e JOIN jobs j ON j.id = e.job_id
      WHERE e.status = 'needs_review'
      ORDER BY COALESCE(e.settled_at, e.updated_at), e.job_id, e.name
      LIMIT $1`,
    [limit],
  );
  return rows.map((row) => ({
    jobId: row.job_id,
    name: row.name,
    principalId: row.principal_id,
    operation: row.operation,
    idempotencyKey: row.idempotency_key,
    jobCreatedAt: row.job_created_at,
    waitingSince: row.waiting_since,
    error: row.error,
    tries: row.tries,
    owners: row.owners,
    lookupFailures: row.lookup_failures,
  }));
}

/** How many wait in each list (the pages show the oldest; the counts say how many more). */
export async function attentionCounts(db: Queryable): Promise<{ awaiting: number; inReview: number }> {
  const { rows } = await db.query<{ awaiting: number; in_review: number }>(
    `SELECT (SELECT count(*) FROM jobs WHERE status = 'awaiting_resolution')::int AS awaiting,
            (SELECT count(*) FROM effects WHERE status = 'needs_review')::int AS in_review`,
  );
  return { awaiting: rows[0]!.awaiting, inReview: rows[0]!.in_review };
}

import { JobEventType } from './events';
import { JOB_COLUMNS, toJobRecord, type JobRecord } from './jobs';
import type { JobScope } from '../jobs/scope';
import type { Queryable } from './queryable';

export interface EventDetail {
  type: string;
  at: string;
  detail: Record<string, unknown>;
}

/** The details document of a job (jobs.details), kept by triggers on its child tables. */
export interface DetailsDocument {
  attempts: unknown[];
  effects: unknown[];
  events: EventDetail[];
}

/** A job with everything its API view shows, read as one row. */
export interface JobDetails {
  job: JobRecord;
  details: DetailsDocument;
  /** The current run's bill with its adjustments (job_settlement, migration 0014); absent before the run is terminal. */
  settlement?: Record<string, unknown>;
  /** A reopened job's bills, one per ended run, oldest first (job_settlements); absent for a job never reopened. */
  settlements?: Array<Record<string, unknown>>;
}

type DetailsRow = Parameters<typeof toJobRecord>[0] & { details: DetailsDocument; settlement: Record<string, unknown> | null; settlements: Array<Record<string, unknown>> | null };

function toDetails(row: DetailsRow | undefined): JobDetails | undefined {
  if (!row) return undefined;
  return { job: toJobRecord(row), details: row.details, ...(row.settlement ? { settlement: row.settlement } : {}), ...(row.settlements ? { settlements: row.settlements } : {}) };
}

/** The details of a job just created: its one event is the created event written with it. */
export function newJobDetails(job: JobRecord): JobDetails {
  return {
    job,
    details: { attempts: [], effects: [], events: [{ type: JobEventType.created, at: job.createdAt.toISOString(), detail: { requestDigest: job.requestDigest } }] },
  };
}

/**
 * The details document: stored on the row once the job is terminal (a
 * replay is one row), built from the child tables while it runs.
 */
const DETAILS = `CASE WHEN terminal_at IS NULL THEN job_details(id) ELSE details END AS details,
  CASE WHEN terminal_at IS NULL THEN NULL ELSE job_settlement(id) END AS settlement,
  CASE WHEN run > 1 THEN job_settlements(id) END AS settlements`;

/** A job and its details by id, or undefined. */
export async function loadJobDetailsById(db: Queryable, id: string): Promise<JobDetails | undefined> {
  const { rows } = await db.query<DetailsRow>(`SELECT ${JOB_COLUMNS}, ${DETAILS} FROM jobs WHERE id = $1`, [id]);
  return toDetails(rows[0]);
}

/** The job of a scope and its details, or undefined. */
export async function loadJobDetailsByScope(db: Queryable, scope: JobScope): Promise<JobDetails | undefined> {
  const { rows } = await db.query<DetailsRow>(`SELECT ${JOB_COLUMNS}, ${DETAILS} FROM jobs WHERE principal_id = $1 AND operation = $2 AND idempotency_key = $3`, [
    scope.principalId,
    scope.operation,
    scope.idempotencyKey,
  ]);
  return toDetails(rows[0]);
}

import { JobEventType } from './events';
import { JOB_COLUMNS, toJobRecord, type JobRecord } from './jobs';
import type { JobScope } from '../jobs/scope';
import { prepared } from '../db/prepared';
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
  /** The current run's bill with its adjustments (the settlement_documents view, migration 0015); absent before the run is terminal. */
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
 * A job with its details document and settlement. The document is stored on
 * the row once the job is terminal (a replay is one row), built from the
 * child tables while it runs; the settlement exists from the terminal write
 * on. Each read is prepared (db/prepared): PostgreSQL plans it once per
 * connection instead of at every replay.
 */
const SELECT_DETAILS = `SELECT ${JOB_COLUMNS},
    CASE WHEN terminal_at IS NULL THEN job_details(id) ELSE details END AS details,
    (SELECT s.document FROM settlement_documents s WHERE s.job_id = jobs.id AND s.run = jobs.run) AS settlement,
    CASE WHEN jobs.run > 1 THEN job_settlements(jobs.id) END AS settlements
  FROM jobs`;

const BY_ID = `${SELECT_DETAILS} WHERE jobs.id = $1`;
const BY_SCOPE = `${SELECT_DETAILS} WHERE principal_id = $1 AND operation = $2 AND idempotency_key = $3`;

/** A job and its details by id, or undefined. */
export async function loadJobDetailsById(db: Queryable, id: string): Promise<JobDetails | undefined> {
  const { rows } = await db.query<DetailsRow>(prepared(BY_ID, [id]));
  return toDetails(rows[0]);
}

/** The job of a scope and its details, or undefined. */
export async function loadJobDetailsByScope(db: Queryable, scope: JobScope): Promise<JobDetails | undefined> {
  const { rows } = await db.query<DetailsRow>(prepared(BY_SCOPE, [scope.principalId, scope.operation, scope.idempotencyKey]));
  return toDetails(rows[0]);
}

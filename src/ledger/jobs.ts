import type { Pool } from 'pg';
import { inTransaction } from '../db/pool';
import { JobStatus } from '../jobs/status';
import type { JobScope } from '../jobs/scope';
import type { BillingPolicy } from '../operations/define';
import { appendEvent, JobEventType } from './events';
import { holdJobRow } from './job-row';
import { JOB_ENDED_COLUMNS, toJobEnded, type JobEnded, type JobEndedRow } from './job-ended';
import { prepared } from '../db/prepared';
import type { Queryable } from './queryable';

export interface JobRecord extends JobScope {
  id: string;
  requestDigest: string;
  schemaVersion: number;
  status: JobStatus;
  result: unknown;
  error: JobError | null;
  version: number;
  completedBy: string | null;
  workflowId: string;
  createdAt: Date;
  updatedAt: Date;
  terminalAt: Date | null;
  /** The caller's deadline, or null when the job has none. */
  deadlineAt: Date | null;
  /** Which run of the job this is: 1, plus one per reopen (an operation's `reopenFailed`). */
  run: number;
}

interface JobRow {
  id: string;
  principal_id: string;
  operation: string;
  idempotency_key: string;
  request_digest: string;
  schema_version: number;
  status: JobStatus;
  result: unknown;
  error: { type: string; detail: string } | null;
  version: string;
  completed_by?: string | null;
  workflow_id: string;
  created_at: Date;
  updated_at: Date;
  terminal_at: Date | null;
  deadline_at: Date | null;
  run: number;
}

/**
 * The columns a JobRecord is read from. The input is left out: only the
 * activities that render the prompt need it (getJobInput), and replays should
 * not pay for parsing it.
 */
export const JOB_COLUMNS = `id, principal_id, operation, idempotency_key, request_digest, schema_version, status, result, error,
  version, completed_by, workflow_id, created_at, updated_at, terminal_at, deadline_at, run`;

export function toJobRecord(row: JobRow): JobRecord {
  return {
    id: row.id,
    principalId: row.principal_id,
    operation: row.operation,
    idempotencyKey: row.idempotency_key,
    requestDigest: row.request_digest,
    schemaVersion: row.schema_version,
    status: row.status,
    result: row.result,
    error: row.error,
    version: Number(row.version),
    completedBy: row.completed_by ?? null,
    workflowId: row.workflow_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    terminalAt: row.terminal_at,
    deadlineAt: row.deadline_at ?? null,
    run: row.run ?? 1,
  };
}

/** The same key was used for another intent (invariant 2). Carries the existing job. */
export class IdempotencyKeyReusedError extends Error {
  override name = 'IdempotencyKeyReusedError';
  constructor(readonly existing: JobRecord) {
    super('this idempotency key was already used with another request');
  }
}

export interface NewJob extends JobScope {
  /** The new job's id, when the caller chose it (a canary's share is decided by it); else the database's. */
  id?: string;
  requestDigest: string;
  schemaVersion: number;
  input: Record<string, unknown>;
  workflowId: string;
  /** Default: the winner's cost. */
  billing?: BillingPolicy;
  /** The route version that serves the job (providers/route-version). */
  routeVersion?: string;
  /** The caller's deadline; not part of the intent, so not of its digest. */
  deadlineAt?: Date;
}

/**
 * Admits an intent: the unique constraint on the scope decides whether this
 * call created the job (invariant 1); a found job with another digest is a
 * conflict (invariant 2).
 * @returns the job and whether this call created it.
 * @throws IdempotencyKeyReusedError when the scope holds a job with another digest.
 */
export async function admitJob(db: Queryable, job: NewJob): Promise<{ job: JobRecord; created: boolean }> {
  // A row removed by retention between the two statements is simply inserted on the next turn.
  for (;;) {
    // Invariant 1: the database, not this code, decides who creates the job.
    // The created event is written by the same statement, only when the row was.
    const inserted = await db.query<JobRow>(
      prepared(
        `WITH inserted AS (
         INSERT INTO jobs (id, principal_id, operation, idempotency_key, request_digest, schema_version, input, workflow_id, billing, route_version, deadline_at)
         VALUES (COALESCE($10::uuid, gen_random_uuid()), $1, $2, $3, $4, $5, $6, $7, $8, $9, $11)
         ON CONFLICT (principal_id, operation, idempotency_key) DO NOTHING
         RETURNING ${JOB_COLUMNS}
       ), created AS (
         INSERT INTO job_events (job_id, type, detail, created_at)
         SELECT id, '${JobEventType.created}', jsonb_build_object('requestDigest', request_digest), created_at FROM inserted
       )
       SELECT * FROM inserted`,
        [job.principalId, job.operation, job.idempotencyKey, job.requestDigest, job.schemaVersion, job.input, job.workflowId, job.billing === 'all-attempts' ? 'all_attempts' : 'winner', job.routeVersion ?? null, job.id ?? null, job.deadlineAt ?? null],
      ),
    );
    if (inserted.rows[0]) return { job: toJobRecord(inserted.rows[0]), created: true };
    const existing = await findJobByScope(db, job);
    if (!existing) continue;
    // Invariant 2: a key binds one exact intent.
    if (existing.requestDigest !== job.requestDigest) throw new IdempotencyKeyReusedError(existing);
    return { job: existing, created: false };
  }
}

/** What a reopen needs: the failed run the caller saw, and what the new run starts with. */
export interface Reopening {
  jobId: string;
  /** The digest of the request that reopens: only the same intent may. */
  requestDigest: string;
  /** The run the caller saw fail: a retry that saw an earlier failure reopens nothing. */
  failedRun: number;
  /** The new run's workflow (jobRunWorkflowId). */
  workflowId: string;
  /** The new run's deadline: the reopening request's, or none. */
  deadlineAt: Date | null;
}

/**
 * Starts a new run of a failed job (an operation's `reopenFailed`): one
 * compare-and-swap on the failed row moves it back to accepted under its next
 * run, with a `job.reopened` event, only while the job is failed, its run is
 * the one the caller saw, its digest is the request's and no effect of it was
 * ever claimed. Concurrent identical retries reopen it once; the scope still
 * holds one job (invariant 1).
 * @returns the reopened job and its route version, or undefined when nothing was reopened.
 */
export async function reopenFailedJob(db: Queryable, reopening: Reopening): Promise<{ job: JobRecord; routeVersion: string | null } | undefined> {
  // Invariants 1, 7 and 12: the same row, never after a claim (an effect may be out), only from the failure the caller saw.
  const { rows } = await db.query<JobRow & { route_version: string | null }>(
    `WITH reopened AS (
       UPDATE jobs j SET status = 'accepted', run = j.run + 1, error = NULL, output = NULL, completed_by = NULL,
              version = j.version + 1, terminal_at = NULL, updated_at = now(), swept_at = NULL,
              workflow_id = $4, deadline_at = $5
       FROM jobs before
       WHERE j.id = $1 AND before.id = j.id
         AND j.status = 'failed' AND j.run = $3 AND j.request_digest = $2
         AND NOT EXISTS (SELECT 1 FROM effects e WHERE e.job_id = $1)
       RETURNING ${JOB_COLUMNS.split(',').map((column) => `j.${column.trim()}`).join(', ')}, j.route_version, before.error AS previous_error
     ), noted AS (
       INSERT INTO job_events (job_id, type, detail)
       SELECT id, '${JobEventType.reopened}', jsonb_build_object('run', run, 'previousRun', run - 1, 'previousError', previous_error, 'workflowId', workflow_id) FROM reopened
     )
     SELECT * FROM reopened`,
    [reopening.jobId, reopening.requestDigest, reopening.failedRun, reopening.workflowId, reopening.deadlineAt],
  );
  return rows[0] ? { job: toJobRecord(rows[0]), routeVersion: rows[0].route_version } : undefined;
}

/** The job of a scope, or undefined. */
export async function findJobByScope(db: Queryable, scope: JobScope): Promise<JobRecord | undefined> {
  const { rows } = await db.query<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE principal_id = $1 AND operation = $2 AND idempotency_key = $3`, [
    scope.principalId,
    scope.operation,
    scope.idempotencyKey,
  ]);
  return rows[0] ? toJobRecord(rows[0]) : undefined;
}

/** A job by id, or undefined. Tenant checks are the caller's (see api/jobs-routes). */
export async function getJob(db: Queryable, id: string): Promise<JobRecord | undefined> {
  const { rows } = await db.query<JobRow>(prepared(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id = $1`, [id]));
  return rows[0] ? toJobRecord(rows[0]) : undefined;
}

/** The input a job was submitted with, or undefined when there is no such job. */
export async function getJobInput(db: Queryable, id: string): Promise<Record<string, unknown> | undefined> {
  const { rows } = await db.query<{ input: Record<string, unknown> }>('SELECT input FROM jobs WHERE id = $1', [id]);
  return rows[0]?.input;
}

/** Channel on which terminal writes are announced; the API's waiters listen on it. */
export const JOB_TERMINAL_CHANNEL = 'onceflow_job_terminal';

/**
 * Moves a non-terminal job to another non-terminal status.
 * @returns false when the job is already terminal (nothing changed).
 */
export async function setJobProgress(db: Queryable, jobId: string, status: typeof JobStatus.running | typeof JobStatus.awaitingResolution): Promise<boolean> {
  // A terminal job never moves again; the event goes with the change, in one statement.
  const { rowCount } = await db.query(
    `WITH moved AS (
       UPDATE jobs SET status = $2, updated_at = now()
       WHERE id = $1 AND terminal_at IS NULL AND status <> $2
       RETURNING id
     )
     INSERT INTO job_events (job_id, type) SELECT id, $3 FROM moved`,
    [jobId, status, status === JobStatus.running ? JobEventType.running : JobEventType.awaitingResolution],
  );
  return Boolean(rowCount);
}

/** A job's error, as the API shows it when the job failed. */
export interface JobError {
  type: string;
  detail: string;
  [extension: string]: unknown;
}

/**
 * Ends a job as failed with a clear error. Bumps the version, so no late
 * attempt can still win.
 * @returns false when the job was already terminal, or one of its effects is
 * claimed and not settled (nothing written).
 */
export async function failJob(db: Queryable, jobId: string, error: JobError): Promise<boolean> {
  // A terminal job never moves again, and a job whose effect may be out is not
  // failed under it: the effect settles first. The event is written by the same
  // statement, so whoever hears of the terminal state also sees why.
  const { rowCount } = await db.query(
    `WITH done AS (
       UPDATE jobs SET status = 'failed', error = $2, version = version + 1, terminal_at = now(), updated_at = now()
       WHERE id = $1 AND terminal_at IS NULL
         AND NOT EXISTS (SELECT 1 FROM effects WHERE job_id = $1 AND status IN ('pending', 'needs_review'))
       RETURNING id
     )
     INSERT INTO job_events (job_id, type, detail) SELECT id, '${JobEventType.failed}', $3 FROM done`,
    [jobId, JSON.stringify(error), JSON.stringify({ type: error.type, detail: error.detail })],
  );
  return Boolean(rowCount);
}

export type CancelOutcome = 'cancelled' | 'terminal' | 'effects_started';

/**
 * Cancels a job that is not terminal. An attempt in flight is not killed: the
 * version bump makes its late result lose the compare-and-swap. An attempt
 * opened but not yet sent is cancelled with the job. Once a side effect has
 * been claimed, the job can no longer be cancelled: the effect may be out.
 */
export async function cancelJob(db: Pool, jobId: string, cancellation: { by: string; reason?: string }): Promise<CancelOutcome> {
  return inTransaction(db, async (tx) => {
    // The job row first (claimEffect locks it too), then a fresh look at effects.
    await holdJobRow(tx, jobId);
    // Not after an effect was claimed: cancelling could not take it back.
    const { rowCount } = await tx.query(
      `UPDATE jobs SET status = 'cancelled', version = version + 1, terminal_at = now(), updated_at = now()
       WHERE id = $1 AND terminal_at IS NULL AND NOT EXISTS (SELECT 1 FROM effects WHERE job_id = $1)`,
      [jobId],
    );
    if (!rowCount) {
      const { rows } = await tx.query<{ terminal: boolean }>('SELECT terminal_at IS NOT NULL AS terminal FROM jobs WHERE id = $1', [jobId]);
      return rows[0]?.terminal === false ? 'effects_started' : 'terminal';
    }
    // An attempt cancelled before it was sent consumed nothing: its zeros are written with it.
    await tx.query(
      `UPDATE attempts SET status = 'cancelled', ended_at = now(), usage_reported = true, input_tokens = 0, output_tokens = 0, cost = 0
       WHERE job_id = $1 AND status = 'starting'`,
      [jobId],
    );
    await appendEvent(tx, jobId, JobEventType.cancelled, { by: cancellation.by, ...(cancellation.reason ? { reason: cancellation.reason } : {}) });
    return 'cancelled';
  });
}

/** The winning attempt's output, or undefined before there is a winner. */
export async function getJobOutput(db: Queryable, id: string): Promise<unknown> {
  const { rows } = await db.query<{ output: unknown }>('SELECT output FROM jobs WHERE id = $1', [id]);
  return rows[0]?.output ?? undefined;
}

/**
 * The job's terminal write after its effects settled: the result is the
 * output with the receipts, written before anyone is told (invariant 7).
 * @returns the job's outcome as metrics count it, or undefined when the job
 * was already terminal or has no winner.
 */
export async function settleJob(db: Queryable, jobId: string, result: unknown): Promise<JobEnded | undefined> {
  // Only a job with a winner and not yet terminal; the event goes with it, and its outcome comes back, in one call (migration 0023).
  const { rows } = await db.query<JobEndedRow>(prepared(`SELECT ${JOB_ENDED_COLUMNS} FROM ledger_finish_job($1, $2)`, [jobId, JSON.stringify(result)]));
  return rows[0] ? toJobEnded(rows[0]) : undefined;
}

/** An open job the sweeper should look at: its workflow must exist and be running. */
export interface JobToSweep {
  id: string;
  principalId: string;
  operation: string;
  status: JobStatus;
  workflowId: string;
}

/**
 * Open jobs older than `minAgeMs` that the sweeper has not looked at within
 * `intervalMs`, oldest first; marks them looked at in the same statement, so
 * two sweepers share the work instead of repeating it.
 */
export async function takeJobsToSweep(db: Queryable, opts: { minAgeMs: number; intervalMs: number; limit: number }): Promise<JobToSweep[]> {
  const { rows } = await db.query<{ id: string; principal_id: string; operation: string; status: JobStatus; workflow_id: string }>(
    `UPDATE jobs SET swept_at = now()
     WHERE id IN (
       SELECT id FROM jobs
       WHERE terminal_at IS NULL
         AND created_at < now() - $1 * interval '1 millisecond'
         AND (swept_at IS NULL OR swept_at < now() - $2 * interval '1 millisecond')
       ORDER BY created_at
       LIMIT $3
       FOR UPDATE SKIP LOCKED)
     RETURNING id, principal_id, operation, status, workflow_id`,
    [opts.minAgeMs, opts.intervalMs, opts.limit],
  );
  return rows.map((row) => ({ id: row.id, principalId: row.principal_id, operation: row.operation, status: row.status, workflowId: row.workflow_id }));
}

import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { inTransaction } from '../db/pool';
import { isUniqueViolation } from '../db/errors';
import { appendEvent, JobEventType } from './events';
import type { Queryable } from './queryable';

/** An attempt's statuses, written once; the type derives from the values. */
export const AttemptStatus = {
  starting: 'starting',
  running: 'running',
  unknown: 'unknown',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
  discarded: 'discarded',
} as const;
export type AttemptStatus = (typeof AttemptStatus)[keyof typeof AttemptStatus];

export interface AttemptResolution {
  outcome: 'failed' | 'cancelled';
  reason: string;
  by: string;
  at: string;
}

export interface AttemptRecord {
  id: string;
  jobId: string;
  seq: number;
  provider: string;
  model: string;
  status: AttemptStatus;
  jobVersion: number;
  startedAt: Date;
  endedAt: Date | null;
  errorClass: string | null;
  errorDetail: string | null;
  evidence: Record<string, unknown> | null;
  resolution: AttemptResolution | null;
}

interface AttemptRow {
  id: string;
  job_id: string;
  seq: number;
  provider: string;
  model: string;
  status: AttemptStatus;
  job_version: string;
  started_at: Date;
  ended_at: Date | null;
  error_class: string | null;
  error_detail: string | null;
  evidence: Record<string, unknown> | null;
  resolution: AttemptResolution | null;
}

function toAttempt(row: AttemptRow): AttemptRecord {
  return {
    id: row.id,
    jobId: row.job_id,
    seq: row.seq,
    provider: row.provider,
    model: row.model,
    status: row.status,
    jobVersion: Number(row.job_version),
    startedAt: row.started_at,
    endedAt: row.ended_at,
    errorClass: row.error_class,
    errorDetail: row.error_detail,
    evidence: row.evidence,
    resolution: row.resolution,
  };
}

export async function getAttempt(db: Queryable, attemptId: string): Promise<AttemptRecord | undefined> {
  const { rows } = await db.query<AttemptRow>('SELECT * FROM attempts WHERE id = $1', [attemptId]);
  return rows[0] ? toAttempt(rows[0]) : undefined;
}

export async function listAttempts(db: Queryable, jobId: string): Promise<AttemptRecord[]> {
  const { rows } = await db.query<AttemptRow>('SELECT * FROM attempts WHERE job_id = $1 ORDER BY seq', [jobId]);
  return rows.map(toAttempt);
}

/** The job's live attempt (starting, running or unknown), if any. */
export async function findLiveAttempt(db: Queryable, jobId: string): Promise<AttemptRecord | undefined> {
  const { rows } = await db.query<AttemptRow>(`SELECT * FROM attempts WHERE job_id = $1 AND status IN ('starting', 'running', 'unknown')`, [jobId]);
  return rows[0] ? toAttempt(rows[0]) : undefined;
}

export type OpenAttemptResult =
  | { kind: 'opened'; attempt: AttemptRecord }
  | { kind: 'live'; attempt: AttemptRecord }
  | { kind: 'terminal'; status: string };

/**
 * Opens the next attempt of a job. The partial unique index decides whether
 * another attempt is still live (invariant 3): then nothing is opened and the
 * live one is returned.
 */
export async function openAttempt(db: Pool, opening: { jobId: string; provider: string; model: string }): Promise<OpenAttemptResult> {
  try {
    return await inTransaction(db, async (tx) => {
      const { rows: jobs } = await tx.query<{ status: string; version: string; done: boolean }>(
        'SELECT status, version, terminal_at IS NOT NULL OR completed_by IS NOT NULL AS done FROM jobs WHERE id = $1 FOR UPDATE',
        [opening.jobId],
      );
      const job = jobs[0];
      if (!job) throw new Error(`job ${opening.jobId} is not in the ledger`);
      // A job that is terminal, or already has its winner, takes no more attempts.
      if (job.done) return { kind: 'terminal', status: job.status } as const;
      // Invariant 3: this INSERT fails (23505 on attempts_one_live_per_job) while another attempt is live.
      const { rows } = await tx.query<AttemptRow>(
        `INSERT INTO attempts (job_id, seq, provider, model, job_version)
         VALUES ($1, (SELECT COALESCE(max(seq), 0) + 1 FROM attempts WHERE job_id = $1), $2, $3, $4)
         RETURNING *`,
        [opening.jobId, opening.provider, opening.model, job.version],
      );
      const attempt = toAttempt(rows[0]!);
      await tx.query(`UPDATE jobs SET status = 'running', updated_at = now() WHERE id = $1 AND status IN ('accepted', 'awaiting_resolution')`, [opening.jobId]);
      await appendEvent(tx, opening.jobId, JobEventType.attemptOpened, { attemptId: attempt.id, seq: attempt.seq, provider: attempt.provider, model: attempt.model });
      return { kind: 'opened', attempt } as const;
    });
  } catch (err) {
    if (!isUniqueViolation(err, 'attempts_one_live_per_job')) throw err;
    const live = await findLiveAttempt(db, opening.jobId);
    if (!live) throw err;
    return { kind: 'live', attempt: live };
  }
}

/**
 * Marks an attempt as sent, just before its request goes out. False when the
 * attempt is no longer `starting` or its job is terminal: then nothing may be sent.
 */
export async function markAttemptRunning(db: Pool, attemptId: string): Promise<boolean> {
  return inTransaction(db, async (tx) => {
    await lockJobThenAttempt(tx, attemptId);
    // Only a starting attempt of a job that is still open may send its request.
    const { rowCount } = await tx.query(
      `UPDATE attempts a SET status = 'running'
       FROM jobs j
       WHERE a.id = $1 AND a.status = 'starting' AND j.id = a.job_id AND j.terminal_at IS NULL`,
      [attemptId],
    );
    return rowCount === 1;
  });
}

export type CommitOutcome = 'succeeded' | 'discarded';

/**
 * Offers an attempt's output to its job's result slot. It enters only by
 * compare-and-swap on the version the attempt opened with (invariant 5);
 * otherwise the output is dropped, the attempt is `discarded` and the race is
 * recorded. With `terminal`, the output is the job's result at once; without
 * (the operation has effects), it waits in jobs.output until they settle.
 */
export async function commitAttemptResult(db: Pool, attemptId: string, output: unknown, opts: { terminal: boolean }): Promise<CommitOutcome> {
  return inTransaction(db, async (tx) => {
    const attempt = await lockJobThenAttempt(tx, attemptId);
    if (attempt.status === AttemptStatus.succeeded || attempt.status === AttemptStatus.discarded) return attempt.status;
    // Only a live attempt may still win: one ended as failed or cancelled has
    // been given up on, and a next attempt may hold the slot's hopes now.
    const mayWin = attempt.status === AttemptStatus.running || attempt.status === AttemptStatus.unknown;
    // Invariant 5: one winner. Any change since the attempt opened (another
    // result, a resolution, a failure, a cancellation) makes this update miss.
    const won = mayWin
      ? await tx.query(
          `UPDATE jobs SET output = $3::jsonb, completed_by = $2, version = version + 1, updated_at = now(),
                  status = CASE WHEN $5::boolean THEN 'succeeded' ELSE 'running' END,
                  result = CASE WHEN $5::boolean THEN $3::jsonb ELSE NULL END,
                  terminal_at = CASE WHEN $5::boolean THEN now() ELSE NULL END
           WHERE id = $1 AND version = $4 AND completed_by IS NULL`,
          [attempt.jobId, attempt.id, JSON.stringify(output), attempt.jobVersion, opts.terminal],
        )
      : { rowCount: 0 };
    if (won.rowCount === 1) {
      await tx.query(`UPDATE attempts SET status = 'succeeded', ended_at = now() WHERE id = $1`, [attempt.id]);
      await appendEvent(tx, attempt.jobId, JobEventType.attemptSucceeded, { attemptId: attempt.id, provider: attempt.provider });
      if (opts.terminal) await appendEvent(tx, attempt.jobId, JobEventType.succeeded, { attemptId: attempt.id });
      return 'succeeded';
    }
    const { rows } = await tx.query<{ completed_by: string | null; status: string }>('SELECT completed_by, status FROM jobs WHERE id = $1', [attempt.jobId]);
    const evidence = {
      discardedOutputSha256: createHash('sha256').update(JSON.stringify(output) ?? '').digest('hex'),
      statusWhenDiscarded: attempt.status,
      winner: rows[0]?.completed_by ?? null,
    };
    await tx.query(
      `UPDATE attempts SET status = 'discarded', ended_at = COALESCE(ended_at, now()), evidence = COALESCE(evidence, '{}'::jsonb) || $2::jsonb WHERE id = $1`,
      [attempt.id, JSON.stringify(evidence)],
    );
    await appendEvent(tx, attempt.jobId, JobEventType.raceLost, { attemptId: attempt.id, provider: attempt.provider, jobStatus: rows[0]?.status, ...evidence });
    return 'discarded';
  });
}

/**
 * Locks an attempt's job row, then the attempt: every transition takes the
 * two in this order (the details triggers update the job row too), so two
 * transitions of one job never deadlock.
 */
async function lockJobThenAttempt(tx: PoolClient, attemptId: string): Promise<AttemptRecord> {
  const { rows: owner } = await tx.query<{ job_id: string }>('SELECT job_id FROM attempts WHERE id = $1', [attemptId]);
  if (!owner[0]) throw new Error(`attempt ${attemptId} is not in the ledger`);
  await tx.query('SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE', [owner[0].job_id]);
  const { rows } = await tx.query<AttemptRow>('SELECT * FROM attempts WHERE id = $1 FOR UPDATE', [attemptId]);
  return toAttempt(rows[0]!);
}

export interface AttemptFailure {
  class: string;
  detail: string;
  evidence?: Record<string, unknown>;
}

/**
 * Ends an attempt as `failed`: it provably did not execute, or its answer broke
 * the contract. A failed attempt no longer blocks the next one.
 * @returns false when the attempt had already ended.
 */
export async function failAttempt(db: Pool, attemptId: string, failure: AttemptFailure): Promise<boolean> {
  return inTransaction(db, async (tx) => {
    await lockJobThenAttempt(tx, attemptId);
    const { rows } = await tx.query<{ job_id: string; was: AttemptStatus }>(
      `UPDATE attempts a SET status = 'failed', ended_at = now(), error_class = $2, error_detail = $3,
              evidence = CASE WHEN $4::jsonb IS NULL THEN a.evidence ELSE COALESCE(a.evidence, '{}'::jsonb) || $4::jsonb END
       FROM attempts before
       WHERE a.id = $1 AND before.id = a.id AND a.status IN ('starting', 'running', 'unknown')
       RETURNING a.job_id, before.status AS was`,
      [attemptId, failure.class, failure.detail.slice(0, 2000), failure.evidence ? JSON.stringify(failure.evidence) : null],
    );
    const row = rows[0];
    if (!row) return false;
    // The slot's version moves on: a late answer of this attempt can no longer win (invariant 5).
    await tx.query(
      `UPDATE jobs SET version = version + 1, updated_at = now(),
              status = CASE WHEN status = 'awaiting_resolution' THEN 'running' ELSE status END
       WHERE id = $1`,
      [row.job_id],
    );
    await appendEvent(tx, row.job_id, JobEventType.attemptFailed, { attemptId, class: failure.class, detail: failure.detail.slice(0, 500), wasUnknown: row.was === 'unknown' });
    return true;
  });
}

/**
 * Marks an attempt `unknown`: its request may have executed (timeout, reset,
 * 5xx, worker lost). The job awaits resolution and no new attempt may start
 * (invariant 4).
 * @returns false when the attempt had already left starting/running.
 */
export async function markAttemptUnknown(db: Pool, attemptId: string, cause: { class: string; detail: string }): Promise<boolean> {
  return inTransaction(db, async (tx) => {
    await lockJobThenAttempt(tx, attemptId);
    // Invariant 4: a timeout is unknown, not failed.
    const { rows } = await tx.query<{ job_id: string }>(
      `UPDATE attempts SET status = 'unknown', error_class = $2, error_detail = $3
       WHERE id = $1 AND status IN ('starting', 'running')
       RETURNING job_id`,
      [attemptId, cause.class, cause.detail.slice(0, 2000)],
    );
    const row = rows[0];
    if (!row) return false;
    await appendEvent(tx, row.job_id, JobEventType.attemptUnknown, { attemptId, class: cause.class, detail: cause.detail.slice(0, 500) });
    const { rowCount } = await tx.query(
      `UPDATE jobs SET status = 'awaiting_resolution', updated_at = now() WHERE id = $1 AND terminal_at IS NULL AND status <> 'awaiting_resolution'`,
      [row.job_id],
    );
    if (rowCount) await appendEvent(tx, row.job_id, JobEventType.awaitingResolution, { attemptId });
    return true;
  });
}

/** Adds what a reconciliation learned to an attempt's evidence, without changing its status. */
export async function noteEvidence(db: Queryable, attemptId: string, evidence: Record<string, unknown>): Promise<void> {
  await db.query(`UPDATE attempts SET evidence = COALESCE(evidence, '{}'::jsonb) || $2::jsonb WHERE id = $1`, [attemptId, JSON.stringify(evidence)]);
}

export class AttemptNotFoundError extends Error {
  override name = 'AttemptNotFoundError';
}

/** Resolving an attempt that is not `unknown`. Carries the attempt as it is. */
export class AttemptNotUnknownError extends Error {
  override name = 'AttemptNotUnknownError';
  constructor(readonly attempt: AttemptRecord) {
    super(`attempt ${attempt.id} is ${attempt.status}, not unknown`);
  }
}

/**
 * An operator's out-of-band resolution of an unknown attempt, with who and why.
 * Bumps the job's version, so a late result of this attempt can no longer win.
 * @throws AttemptNotFoundError when the job has no such attempt.
 * @throws AttemptNotUnknownError when the attempt is not unknown.
 */
export async function resolveAttempt(
  db: Pool,
  resolution: { jobId: string; attemptId: string; outcome: 'failed' | 'cancelled'; reason: string; by: string },
): Promise<AttemptRecord> {
  return inTransaction(db, async (tx) => {
    await tx.query('SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE', [resolution.jobId]);
    const record: AttemptResolution = { outcome: resolution.outcome, reason: resolution.reason, by: resolution.by, at: new Date().toISOString() };
    // Only an unknown attempt is resolved out of band (invariant 4).
    const { rows } = await tx.query<AttemptRow>(
      `UPDATE attempts SET status = $3, ended_at = now(), resolution = $4
       WHERE id = $1 AND job_id = $2 AND status = 'unknown'
       RETURNING *`,
      [resolution.attemptId, resolution.jobId, resolution.outcome, JSON.stringify(record)],
    );
    if (!rows[0]) {
      const { rows: found } = await tx.query<AttemptRow>('SELECT * FROM attempts WHERE id = $1 AND job_id = $2', [resolution.attemptId, resolution.jobId]);
      if (!found[0]) throw new AttemptNotFoundError(`job ${resolution.jobId} has no attempt ${resolution.attemptId}`);
      throw new AttemptNotUnknownError(toAttempt(found[0]));
    }
    await tx.query(
      `UPDATE jobs SET version = version + 1, updated_at = now(),
              status = CASE WHEN terminal_at IS NULL THEN 'running' ELSE status END
       WHERE id = $1`,
      [resolution.jobId],
    );
    await appendEvent(tx, resolution.jobId, JobEventType.attemptResolved, { attemptId: resolution.attemptId, ...record });
    return toAttempt(rows[0]);
  });
}

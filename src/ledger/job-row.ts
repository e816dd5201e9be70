import type { PoolClient } from 'pg';
import { prepared } from '../db/prepared';
import type { Queryable } from './queryable';

/** Locks a job row for the rest of the caller's transaction, reading nothing from it (see lockJobRow). */
export async function holdJobRow(tx: Queryable, jobId: string): Promise<void> {
  await tx.query(prepared('SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE', [jobId]));
}

/** What a transition needs to know of the job it locked. */
export interface LockedJob {
  id: string;
  operation: string;
  status: string;
  version: number;
  terminal: boolean;
  completedBy: string | null;
  /** Milliseconds left before the caller's deadline by the database's clock (0 or less: passed), or null without one. */
  deadlineLeftMs: number | null;
  /** The route version the job was admitted to (null for jobs admitted before versions were recorded). */
  routeVersion: string | null;
  /** The job's current run: its attempts are the ones the attempt cap counts. */
  run: number;
  /** The workflow that drives the current run (a reopened job's run has a workflow of its own). */
  workflowId: string;
  /** The job's input, when asked for. */
  input?: Record<string, unknown>;
}

/** Milliseconds from the transaction's now() to jobs.deadline_at (NULL without a deadline), as SQL. */
export const DEADLINE_LEFT_MS = `floor(extract(epoch FROM deadline_at - now()) * 1000)::bigint`;

/**
 * Locks a job row for the rest of the caller's transaction. Every transition
 * of a job and its attempts and effects takes the job row first, then the
 * child row, so two of them never deadlock.
 */
export async function lockJobRow(tx: PoolClient, jobId: string, opts: { withInput?: boolean } = {}): Promise<LockedJob | undefined> {
  return readJob(tx, jobId, { ...opts, lock: true });
}

/**
 * A job row as lockJobRow reads it, without locking it: what a decision
 * needs before the call that locks the row and checks that it still holds
 * (see openFirstAttempt).
 */
export async function peekJobRow(db: Queryable, jobId: string, opts: { withInput?: boolean } = {}): Promise<LockedJob | undefined> {
  return readJob(db, jobId, { ...opts, lock: false });
}

/** A job row's columns as LockedJob maps them, by name (a newer migration's column changes nothing), with its input when asked. */
export const jobColumns = (withInput: boolean): string =>
  `id, operation, status, version, terminal_at IS NOT NULL AS terminal, completed_by, route_version, run, workflow_id, ${DEADLINE_LEFT_MS} AS deadline_left_ms${withInput ? ', input' : ''}`;

/** A row of jobColumns, as the driver gives it (bigints as text, or as numbers through row_to_json). */
export interface JobRow {
  id: string;
  operation: string;
  status: string;
  version: string | number;
  terminal: boolean;
  completed_by: string | null;
  route_version: string | null;
  run: number;
  workflow_id: string;
  deadline_left_ms: string | number | null;
  input?: Record<string, unknown>;
}

export function toLockedJob(row: JobRow): LockedJob {
  return {
    id: row.id,
    operation: row.operation,
    status: row.status,
    version: Number(row.version),
    terminal: row.terminal,
    completedBy: row.completed_by,
    routeVersion: row.route_version,
    run: row.run,
    workflowId: row.workflow_id,
    deadlineLeftMs: row.deadline_left_ms === null ? null : Number(row.deadline_left_ms),
    ...(row.input ? { input: row.input } : {}),
  };
}

async function readJob(db: Queryable, jobId: string, opts: { withInput?: boolean; lock: boolean }): Promise<LockedJob | undefined> {
  const { rows } = await db.query<JobRow>(prepared(`SELECT ${jobColumns(opts.withInput === true)}\n     FROM jobs WHERE id = $1${opts.lock ? ' FOR UPDATE' : ''}`, [jobId]));
  const row = rows[0];
  return row ? toLockedJob(row) : undefined;
}

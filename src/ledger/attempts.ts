import type { Pool, PoolClient } from 'pg';
import { inTransaction } from '../db/pool';
import { effectKey, toEffect, type EffectRecord, type EffectRow } from './effects';
import { appendEvent, JobEventType } from './events';
import { toJobEnded, type JobEnded, type JobEndedRow } from './job-ended';
import { DEADLINE_LEFT_MS, holdJobRow, lockJobRow } from './job-row';
import type { Queryable } from './queryable';
import { prepared } from '../db/prepared';
import { NOTHING_SENT, recordUsageLocked, toMeteredUsage, usageArguments, type AttemptUsage, type MeteredUsage, type UsageRow } from './usage';

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

/** A live attempt blocks the next one (invariant 3). */
export const LIVE_ATTEMPT_STATUSES: readonly AttemptStatus[] = [AttemptStatus.starting, AttemptStatus.running, AttemptStatus.unknown];

export interface AttemptResolution {
  outcome: 'failed' | 'cancelled';
  reason: string;
  by: string;
  at: string;
}

export interface AttemptRecord {
  id: string;
  jobId: string;
  operation: string;
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
  /** What it consumed; null while not known. */
  usage: RecordedUsage | null;
  /** Its lane: 0, or a hedge's (at most one live attempt per lane). */
  lane: number;
  /** The run of the job it belongs to (1 unless the job was reopened). */
  run: number;
}

/** An attempt's usage as the ledger holds it: counts as numbers, money as a decimal string. */
export interface RecordedUsage {
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number | null;
  model: string | null;
  cost: string | null;
  currency: string | null;
}

interface AttemptRow {
  id: string;
  job_id: string;
  operation: string;
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
  lane: number;
  usage_reported: boolean;
  input_tokens: string | null;
  output_tokens: string | null;
  cached_tokens: string | null;
  model_used: string | null;
  cost: string | null;
  cost_currency: string | null;
  run: number;
}

/** An attempt row's columns, named (not `*`): a prepared statement's result may not change when a newer migration adds a column. */
const ATTEMPT_COLUMNS = `id, job_id, operation, seq, provider, model, status, job_version, started_at, ended_at, error_class, error_detail, evidence,
  resolution, lane, usage_reported, input_tokens, output_tokens, cached_tokens, model_used, cost, cost_currency, run`;

function toUsage(row: AttemptRow): RecordedUsage | null {
  if (!row.usage_reported) return null;
  return {
    inputTokens: Number(row.input_tokens),
    outputTokens: Number(row.output_tokens),
    cachedTokens: row.cached_tokens === null ? null : Number(row.cached_tokens),
    model: row.model_used,
    cost: row.cost,
    currency: row.cost_currency,
  };
}

function toAttempt(row: AttemptRow): AttemptRecord {
  return {
    id: row.id,
    jobId: row.job_id,
    operation: row.operation,
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
    usage: toUsage(row),
    lane: row.lane ?? 0,
    run: row.run ?? 1,
  };
}

export async function getAttempt(db: Queryable, attemptId: string): Promise<AttemptRecord | undefined> {
  const { rows } = await db.query<AttemptRow>(prepared(`SELECT ${ATTEMPT_COLUMNS} FROM attempts WHERE id = $1`, [attemptId]));
  return rows[0] ? toAttempt(rows[0]) : undefined;
}

export async function listAttempts(db: Queryable, jobId: string): Promise<AttemptRecord[]> {
  const { rows } = await db.query<AttemptRow>(prepared(`SELECT ${ATTEMPT_COLUMNS} FROM attempts WHERE job_id = $1 ORDER BY seq`, [jobId]));
  return rows.map(toAttempt);
}

/** The job's live attempt (starting, running or unknown), if any. */
export async function findLiveAttempt(db: Queryable, jobId: string, lane = 0): Promise<AttemptRecord | undefined> {
  const { rows } = await db.query<AttemptRow>(`SELECT * FROM attempts WHERE job_id = $1 AND lane = $2 AND status IN ('starting', 'running', 'unknown')`, [jobId, lane]);
  return rows[0] ? toAttempt(rows[0]) : undefined;
}

/**
 * Attempts whose cost is still to learn after their job moved on, on the
 * providers that can be asked (those with a lookup: the others would crowd
 * them out of every batch, and nothing can be learned of them): those still
 * unknown in jobs that have ended, not looked up within `intervalMs`; and
 * those an operator resolved while their usage was not known, not looked up
 * since the resolution (asked once more, and again every interval for a day
 * while the provider says it is still executing). Least recently looked at first.
 */
export async function takeLeftoverAttempts(db: Queryable, opts: { intervalMs: number; limit: number; providers: readonly string[] }): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM (
       SELECT a.id, COALESCE((a.evidence -> 'lastLookup' ->> 'at')::timestamptz, a.ended_at, a.started_at) AS looked_at
         FROM attempts a JOIN jobs j ON j.id = a.job_id
        WHERE a.status = 'unknown' AND j.terminal_at IS NOT NULL AND a.provider = ANY($3::text[])
       UNION ALL
       SELECT a.id, COALESCE((a.evidence -> 'lastLookup' ->> 'at')::timestamptz, a.ended_at, a.started_at)
         FROM attempts a
        WHERE a.resolution IS NOT NULL AND NOT a.usage_reported AND a.provider = ANY($3::text[])
          AND (COALESCE((a.evidence -> 'lastLookup' ->> 'at')::timestamptz, '-infinity') < (a.resolution ->> 'at')::timestamptz
               -- still executing when last asked: asked again, for a day after the resolution
               OR (a.evidence -> 'lastLookup' ->> 'status' = 'executing' AND (a.resolution ->> 'at')::timestamptz > now() - interval '1 day'))
     ) leftover
     WHERE looked_at < now() - $1 * interval '1 millisecond'
     ORDER BY looked_at
     LIMIT $2`,
    [opts.intervalMs, opts.limit, opts.providers],
  );
  return rows.map((row) => row.id);
}

export type OpenAttemptResult = { kind: 'opened'; attempt: AttemptRecord } | { kind: 'live'; attempt: AttemptRecord } | { kind: 'terminal'; status: string };

export interface AttemptOpening {
  jobId: string;
  provider: string;
  model: string;
  /**
   * Chosen by the caller (the workflow), so a retried open finds the attempt
   * it opened instead of mistaking it for someone else's live attempt.
   */
  attemptId?: string;
  /** The lane (default 0): a hedge opens in a lane of its own while another attempt is unknown. */
  lane?: number;
}

/**
 * Opens the next attempt of a job inside the caller's transaction, which
 * must hold the job row (lockJobRow). Retry-safe: an attempt with the given
 * id is returned as opened. The partial unique index decides whether another
 * attempt is still live (invariant 3): then nothing is opened and the live
 * one is returned. `known` is the job's attempts when the caller has just
 * read them in this transaction.
 */
export async function openAttemptLocked(tx: PoolClient, opening: AttemptOpening & { operation: string; known?: AttemptRecord[] }): Promise<OpenAttemptResult> {
  if (opening.attemptId) {
    const mine = opening.known ? opening.known.find((attempt) => attempt.id === opening.attemptId) : await getAttempt(tx, opening.attemptId);
    if (mine && mine.jobId !== opening.jobId) throw new Error(`attempt ${opening.attemptId} belongs to another job`);
    if (mine) return { kind: 'opened', attempt: mine };
  }
  // Invariant 3: the partial unique index admits no second live attempt in a lane; the conflict opens nothing (ledger_open_attempt, migration 0024).
  const lane = opening.lane ?? 0;
  const { rows } = await tx.query<AttemptRow>(
    prepared(`SELECT ${ATTEMPT_COLUMNS} FROM ledger_open_attempt($1, $2, $3, $4, $5, $6)`, [opening.attemptId ?? null, opening.jobId, opening.operation, opening.provider, opening.model, lane]),
  );
  if (!rows[0]) {
    const live = await findLiveAttempt(tx, opening.jobId, lane);
    if (!live) throw new Error(`job ${opening.jobId}: the live-attempt index refused an attempt, but no live attempt is there`);
    return { kind: 'live', attempt: live };
  }
  return { kind: 'opened', attempt: toAttempt(rows[0]) };
}

/**
 * A new job's first attempt at `provider`/`model`, opened in one call that
 * locks the job row first: only while the job is still accepted on its first
 * run (so it has no attempt), open, driven by `workflowId`, on `routeVersion`,
 * with at least `minAttemptMs` left before its deadline (or none); see
 * ledger_open_first_attempt (migration 0024).
 * @returns the attempt (`running` when sent, else `starting`) and the time left before the job's deadline, or undefined when nothing was opened.
 */
export async function openFirstAttempt(
  db: Queryable,
  opening: {
    jobId: string;
    attemptId: string;
    workflowId: string;
    routeVersion: string | null;
    provider: string;
    model: string;
    minAttemptMs: number;
    /** Marks the attempt sent (`running`) as it opens: its request goes out next. */
    send: boolean;
  },
): Promise<{ attempt: AttemptRecord; deadlineLeftMs: number | null } | undefined> {
  const { rows } = await db.query<AttemptRow & { deadline_left_ms: string | null }>(
    prepared(`SELECT ${FIRST_OPENED_COLUMNS}, o.deadline_left_ms FROM ledger_open_first_attempt($1, $2, $3, $4, $5, $6, $7, $8) o`, [
      opening.jobId,
      opening.attemptId,
      opening.workflowId,
      opening.routeVersion,
      opening.provider,
      opening.model,
      opening.minAttemptMs,
      opening.send,
    ]),
  );
  const row = rows[0];
  return row ? { attempt: toAttempt(row), deadlineLeftMs: row.deadline_left_ms === null ? null : Number(row.deadline_left_ms) } : undefined;
}

/** The attempt's columns of ledger_open_first_attempt's `attempt`, by name. */
const FIRST_OPENED_COLUMNS = ATTEMPT_COLUMNS.split(',')
  .map((column) => `(o.attempt).${column.trim()}`)
  .join(', ');

/** An attempt with its job's input and the time left before its deadline: what sending it needs, in one read. */
export async function getAttemptToSend(db: Queryable, attemptId: string): Promise<{ attempt: AttemptRecord; input: Record<string, unknown>; deadlineLeftMs: number | null } | undefined> {
  const { rows } = await db.query<AttemptRow & { job_input: Record<string, unknown>; deadline_left_ms: string | null }>(
    `SELECT a.*, j.input AS job_input, ${DEADLINE_LEFT_MS.replace('deadline_at', 'j.deadline_at')} AS deadline_left_ms FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE a.id = $1`,
    [attemptId],
  );
  const row = rows[0];
  return row ? { attempt: toAttempt(row), input: row.job_input, deadlineLeftMs: row.deadline_left_ms === null ? null : Number(row.deadline_left_ms) } : undefined;
}

/**
 * Opens the next attempt of a job in a transaction of its own (see
 * openAttemptLocked); nothing is opened for a job that is terminal or
 * already has its winner.
 */
export async function openAttempt(db: Pool, opening: AttemptOpening): Promise<OpenAttemptResult> {
  return inTransaction(db, async (tx) => {
    const job = await lockJobRow(tx, opening.jobId);
    if (!job) throw new Error(`job ${opening.jobId} is not in the ledger`);
    // A job that is terminal, or already has its winner, takes no more attempts.
    if (job.terminal || job.completedBy) return { kind: 'terminal', status: job.status } as const;
    return openAttemptLocked(tx, { ...opening, operation: job.operation });
  });
}

/** Locks an attempt's job row, then the attempt (the one lock order; see lockJobRow). */
async function lockJobThenAttempt(tx: PoolClient, attemptId: string): Promise<AttemptRecord> {
  const { rows: owner } = await tx.query<{ job_id: string }>('SELECT job_id FROM attempts WHERE id = $1', [attemptId]);
  if (!owner[0]) throw new AttemptNotFoundError(`attempt ${attemptId} is not in the ledger`);
  await holdJobRow(tx, owner[0].job_id);
  const { rows } = await tx.query<AttemptRow>('SELECT * FROM attempts WHERE id = $1 FOR UPDATE', [attemptId]);
  return toAttempt(rows[0]!);
}

/**
 * Marks an attempt as sent, just before its request goes out. False when the
 * attempt is no longer `starting` (it was given up on as not sent, or
 * cancelled) or its job is terminal: then nothing may be sent. One statement:
 * it locks only the attempt row (a cancellation that races it waits for it,
 * then finds it running).
 */
export async function markAttemptRunning(db: Queryable, attemptId: string): Promise<boolean> {
  // Invariant 12: only a starting attempt of a job that is still open may send its request.
  const { rowCount } = await db.query(
    prepared(
      `UPDATE attempts a SET status = 'running'
     FROM jobs j
     WHERE a.id = $1 AND a.status = 'starting' AND j.id = a.job_id AND j.terminal_at IS NULL`,
      [attemptId],
    ),
  );
  return rowCount === 1;
}

/**
 * What happened to an answer offered to the job's result slot:
 * - succeeded: it won the compare-and-swap; it is the job's output;
 * - discarded: the attempt was live but the slot had moved on (another
 *   result, a cancellation, a terminal write): the answer is dropped;
 * - late: the attempt had already ended (resolved by an operator, failed,
 *   cancelled): its status stands, and the answer is only recorded.
 */
export type CommitOutcome = 'succeeded' | 'discarded' | 'late';

/**
 * Offers an attempt's output to its job's result slot. It enters only by
 * compare-and-swap on the version the attempt opened with (invariant 5);
 * otherwise the output is dropped and the race is recorded. An attempt that
 * already ended keeps its status (invariant 12: an operator's resolution is
 * never rewritten). With `terminal`, the output is the job's result at once;
 * without (the operation has effects), it waits in jobs.output until they settle.
 */
export async function commitAttemptResult(db: Pool, attemptId: string, output: unknown, opts: { terminal: boolean; usage?: AttemptUsage }): Promise<CommitOutcome> {
  const attempt = await getAttempt(db, attemptId);
  if (!attempt) throw new AttemptNotFoundError(`attempt ${attemptId} is not in the ledger`);
  return (await commitAndClaim(db, attempt, output, opts)).outcome;
}

/** What an answer offered to the result slot comes with. */
export interface CommitOptions {
  terminal: boolean;
  /** With `terminal`: the job's result (the operation's finalize of the output), when it is not the output itself. */
  result?: unknown;
  /** With `sending`, the claim is born in its first try (see EffectRunner.claimsSending). */
  claim?: { name: string; owner: string; leaseMs: number; sending?: boolean };
  usage?: AttemptUsage;
  /**
   * The job hedges (a read-only generation): attempts in flight side by side
   * may each win while they are live, whatever ended meanwhile (a hedge that
   * failed moves the version on, but must not keep the unknown attempt's
   * answer out).
   */
  hedged?: boolean;
}

/**
 * commitAttemptResult for an attempt the caller has read, and, when it wins
 * a job with effects, the claim of the first effect in the same transaction
 * (invariant 7: the claim is the ledger's before anything is sent; only the
 * caller may perform it). Inside a caller's transaction too (`db` a client).
 * @throws Error when the attempt won the result slot while not live (the ledger is inconsistent; nothing is written).
 */
export async function commitAndClaim(
  db: Queryable,
  attempt: Pick<AttemptRecord, 'id' | 'jobId' | 'jobVersion' | 'provider'>,
  output: unknown,
  opts: CommitOptions,
): Promise<CommitResult> {
  // One call, which is its own transaction when `db` is the pool (ledger_commit_answer, migration 0026).
  // Invariant 5: one winner, by compare-and-swap on the version the attempt
  // opened with. A hedged job's attempts run side by side: each may win while
  // it is live and the job is open. A miss records the race; an ended attempt
  // keeps its status (invariant 12: an operator's resolution is never rewritten).
  const outputText = JSON.stringify(output);
  const { rows } = await db.query<{ outcome: CommitOutcome; usage: UsageRow | null; claimed: EffectRow | null; ended: JobEndedRow | null }>(
    prepared(
      `SELECT outcome, usage, claimed, ended FROM ledger_commit_answer($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)`,
      [
        attempt.jobId,
        attempt.id,
        attempt.provider,
        outputText,
        attempt.jobVersion,
        opts.hedged === true,
        opts.terminal,
        opts.terminal ? JSON.stringify(opts.result === undefined ? output : opts.result) : null,
        new Date().toISOString(),
        opts.usage !== undefined,
        ...(opts.usage ? usageArguments(opts.usage) : [null, null, null, null, null, null, null, null, null]),
        opts.claim?.name ?? null,
        opts.claim ? effectKey(attempt.jobId, opts.claim.name) : null,
        opts.claim?.owner ?? null,
        opts.claim?.leaseMs ?? null,
        opts.claim?.sending === true,
      ],
    ),
  );
  const row = rows[0]!;
  return {
    outcome: row.outcome,
    ...(row.usage ? { usageRecorded: toMeteredUsage(row.usage) } : {}),
    ...(row.claimed ? { claimed: toEffect(row.claimed) } : {}),
    ...(row.ended ? { ended: toJobEnded(row.ended) } : {}),
  };
}

/** What came of an answer offered to the result slot; `ended`, when this commit was the job's terminal write. */
export interface CommitResult {
  outcome: CommitOutcome;
  claimed?: EffectRecord;
  usageRecorded?: MeteredUsage;
  /** The job's outcome as metrics count it, when this commit ended the job (an operation without effects). */
  ended?: JobEnded;
}

/**
 * A job's status once one of its attempts ended (failed, or resolved by an
 * operator): `awaiting_resolution` while another attempt is still unknown
 * and none is in flight (a hedged job whose sibling is unknown: only
 * evidence or an operator moves it, and the attention list must show it),
 * else `running` again. A terminal job keeps its status.
 */
const STATUS_AFTER_AN_ATTEMPT_ENDED = `CASE
            WHEN jobs.terminal_at IS NOT NULL THEN jobs.status
            WHEN EXISTS (SELECT 1 FROM attempts u WHERE u.job_id = jobs.id AND u.status = 'unknown')
             AND NOT EXISTS (SELECT 1 FROM attempts l WHERE l.job_id = jobs.id AND l.status IN ('starting', 'running')) THEN 'awaiting_resolution'
            WHEN jobs.status = 'awaiting_resolution' THEN 'running'
            ELSE jobs.status END`;

/**
 * The job's version moves on (a late answer of the ended attempt can no
 * longer win: invariant 5) and its status follows (STATUS_AFTER_AN_ATTEMPT_ENDED);
 * a job that begins to wait again for its other unknown attempt says so in its history.
 */
async function moveJobAfterAttemptEnded(tx: PoolClient, jobId: string, attemptId: string): Promise<void> {
  const { rows } = await tx.query<{ was: string; now: string }>(
    `UPDATE jobs SET version = jobs.version + 1, updated_at = now(), status = ${STATUS_AFTER_AN_ATTEMPT_ENDED}
       FROM jobs before WHERE jobs.id = $1 AND before.id = jobs.id
     RETURNING before.status AS was, jobs.status AS now`,
    [jobId],
  );
  if (rows[0]?.now === 'awaiting_resolution' && rows[0].was !== 'awaiting_resolution') await appendEvent(tx, jobId, JobEventType.awaitingResolution, { afterAttempt: attemptId });
}

export interface AttemptFailure {
  class: string;
  detail: string;
  evidence?: Record<string, unknown>;
  /**
   * What the attempt consumed. Default: nothing (NOTHING_SENT), for a request
   * never sent or refused unexecuted; null when it was answered but the
   * provider reported no usage.
   */
  usage?: AttemptUsage | null;
}

/**
 * Ends an attempt as `failed` if it is still in the status `from` names
 * (invariant 12): it provably did not execute, or its answer broke the
 * contract. A failed attempt no longer blocks the next one.
 * @returns false when the attempt had moved on (nothing written).
 */
export async function failAttempt(db: Pool, attemptId: string, from: AttemptStatus, failure: AttemptFailure): Promise<boolean> {
  return inTransaction(db, (tx) => failAttemptLocked(tx, attemptId, from, failure));
}

/** failAttempt inside the caller's transaction (which takes the locks in order itself). */
export async function failAttemptLocked(tx: PoolClient, attemptId: string, from: AttemptStatus, failure: AttemptFailure): Promise<boolean> {
  await lockJobThenAttempt(tx, attemptId);
  // Invariant 12: the transition names the status it leaves.
  const { rows } = await tx.query<{ job_id: string }>(
    `UPDATE attempts a SET status = 'failed', ended_at = now(), error_class = $3, error_detail = $4,
            evidence = CASE WHEN $5::jsonb IS NULL THEN a.evidence ELSE COALESCE(a.evidence, '{}'::jsonb) || $5::jsonb END
     WHERE a.id = $1 AND a.status = $2
     RETURNING a.job_id`,
    [attemptId, from, failure.class, failure.detail.slice(0, 2000), failure.evidence ? JSON.stringify(failure.evidence) : null],
  );
  const row = rows[0];
  if (!row) return false;
  const usage = failure.usage === undefined ? NOTHING_SENT : failure.usage;
  if (usage) await recordUsageLocked(tx, attemptId, usage);
  // The slot's version moves on: a late answer of this attempt can no longer win (invariant 5).
  await moveJobAfterAttemptEnded(tx, row.job_id, attemptId);
  await appendEvent(tx, row.job_id, JobEventType.attemptFailed, { attemptId, class: failure.class, detail: failure.detail.slice(0, 500), wasUnknown: from === AttemptStatus.unknown });
  return true;
}

/**
 * Marks a running attempt `unknown`: its request may have executed (timeout,
 * reset, 5xx, worker lost). The job awaits resolution and no new attempt may
 * start (invariant 4).
 * @returns false when the attempt was no longer running (nothing written).
 */
export async function markAttemptUnknown(db: Pool, attemptId: string, cause: { class: string; detail: string }): Promise<boolean> {
  return inTransaction(db, (tx) => markAttemptUnknownLocked(tx, attemptId, cause));
}

/** markAttemptUnknown inside the caller's transaction. */
export async function markAttemptUnknownLocked(tx: PoolClient, attemptId: string, cause: { class: string; detail: string }): Promise<boolean> {
  await lockJobThenAttempt(tx, attemptId);
  // Invariants 4 and 12: only a request that went out can be unknown.
  const { rows } = await tx.query<{ job_id: string }>(
    `UPDATE attempts SET status = 'unknown', error_class = $2, error_detail = $3
     WHERE id = $1 AND status = 'running'
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
}

/**
 * Adds what a reconciliation learned to an attempt's evidence, without
 * changing its status. Takes the job row first, like every other write.
 */
export async function noteEvidence(db: Pool, attemptId: string, evidence: Record<string, unknown>): Promise<void> {
  await inTransaction(db, async (tx) => {
    await lockJobThenAttempt(tx, attemptId);
    await tx.query(`UPDATE attempts SET evidence = COALESCE(evidence, '{}'::jsonb) || $2::jsonb WHERE id = $1`, [attemptId, JSON.stringify(evidence)]);
  });
}

/**
 * Records the usage of an answer whose attempt had already ended when it
 * arrived (an operator resolved it, its job was cancelled): the answer was
 * paid for, but the attempt's status stands (invariant 12). After settlement
 * this becomes an adjustment row (migration 0009).
 * @returns true when this call recorded it (false: usage already reported).
 */
export async function recordLateUsage(db: Pool, attemptId: string, usage: AttemptUsage): Promise<boolean> {
  return inTransaction(db, async (tx) => {
    await lockJobThenAttempt(tx, attemptId);
    return (await recordUsageLocked(tx, attemptId, usage)) !== undefined;
  });
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
    await holdJobRow(tx, resolution.jobId);
    const record: AttemptResolution = { outcome: resolution.outcome, reason: resolution.reason, by: resolution.by, at: new Date().toISOString() };
    // Invariants 4 and 12: only an unknown attempt is resolved out of band.
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
    await moveJobAfterAttemptEnded(tx, resolution.jobId, resolution.attemptId);
    await appendEvent(tx, resolution.jobId, JobEventType.attemptResolved, { attemptId: resolution.attemptId, ...record });
    return toAttempt(rows[0]);
  });
}

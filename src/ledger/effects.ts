import type { Pool, PoolClient } from 'pg';
import { inTransaction } from '../db/pool';
import { appendEvent, JobEventType } from './events';
import { holdJobRow } from './job-row';
import { prepared } from '../db/prepared';
import type { Queryable } from './queryable';
import { toJobEnded, type JobEnded, type JobEndedRow } from './job-ended';

/** An effect's statuses, written once; the type derives from the values. */
export const EffectStatus = {
  pending: 'pending',
  succeeded: 'succeeded',
  failed: 'failed',
  needsReview: 'needs_review',
} as const;
export type EffectStatus = (typeof EffectStatus)[keyof typeof EffectStatus];

/**
 * Where a pending effect stands between its claim and its settlement; recovery
 * reads it to choose between performing and looking the receipt up (invariant 8).
 */
export const EffectPhase = {
  /** Nothing was sent yet: performing it is safe. */
  claimed: 'claimed',
  /** A try is out, or its answer was lost: only a receipt can tell whether it happened. */
  sending: 'sending',
  /** The downstream refused the last try before acting (429, 503, refused): a new try is safe. */
  notPerformed: 'not_performed',
} as const;
export type EffectPhase = (typeof EffectPhase)[keyof typeof EffectPhase];

export interface EffectRecord {
  id: string;
  jobId: string;
  name: string;
  key: string;
  status: EffectStatus;
  phase: EffectPhase;
  tries: number;
  lookupFailures: number;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  /** Milliseconds until the lease expires, by the database's clock (0 when expired). */
  leaseRemainingMs: number;
  owners: number;
  receipt: Record<string, unknown> | null;
  error: Record<string, unknown> | null;
  resolution: Record<string, unknown> | null;
}

export interface EffectRow {
  id: string;
  job_id: string;
  name: string;
  effect_key: string;
  status: EffectStatus;
  phase: EffectPhase;
  tries: number;
  lookup_failures: number;
  lease_owner: string | null;
  lease_expires_at: Date | string | null;
  lease_remaining_ms: string | number | null;
  owners: number;
  receipt: Record<string, unknown> | null;
  error: Record<string, unknown> | null;
  resolution: Record<string, unknown> | null;
}

// Named, not `*`: a prepared statement's result may not change when a newer migration adds a column.
// Lease arithmetic uses the database's clock only, so workers' clocks never disagree about it.
const COLUMNS = `id, job_id, name, effect_key, status, phase, tries, lookup_failures, lease_owner, lease_expires_at, owners, receipt, error, resolution,
  GREATEST(0, floor(extract(epoch FROM (lease_expires_at - now())) * 1000))::bigint AS lease_remaining_ms`;
/** The same columns as ledger_claim_effect (migration 0023) returns them. */
const COLUMN_NAMES = 'id, job_id, name, effect_key, status, phase, tries, lookup_failures, lease_owner, lease_expires_at, owners, receipt, error, resolution, lease_remaining_ms';

export function toEffect(row: EffectRow): EffectRecord {
  return {
    id: row.id,
    jobId: row.job_id,
    name: row.name,
    key: row.effect_key,
    status: row.status,
    phase: row.phase,
    tries: row.tries,
    lookupFailures: row.lookup_failures,
    leaseOwner: row.lease_owner,
    // A Date from a column; text from a row the ledger returned as JSON.
    leaseExpiresAt: row.lease_expires_at === null ? null : new Date(row.lease_expires_at),
    leaseRemainingMs: Number(row.lease_remaining_ms ?? 0),
    owners: row.owners,
    receipt: row.receipt,
    error: row.error,
    resolution: row.resolution,
  };
}

/** The downstream idempotency key of a job's effect: the same for every try, derived from the job alone. */
export function effectKey(jobId: string, name: string): string {
  return `onceflow-${jobId}-${name}`;
}

export async function getEffect(db: Queryable, jobId: string, name: string): Promise<EffectRecord | undefined> {
  const { rows } = await db.query<EffectRow>(`SELECT ${COLUMNS} FROM effects WHERE job_id = $1 AND name = $2`, [jobId, name]);
  return rows[0] ? toEffect(rows[0]) : undefined;
}

export async function listEffects(db: Queryable, jobId: string): Promise<EffectRecord[]> {
  const { rows } = await db.query<EffectRow>(`SELECT ${COLUMNS} FROM effects WHERE job_id = $1 ORDER BY created_at, name`, [jobId]);
  return rows.map(toEffect);
}

export type ClaimResult = { claimed: true; effect: EffectRecord } | { claimed: false; effect: EffectRecord | undefined };

/**
 * Claims a job's effect before it happens. Only the caller whose INSERT
 * returned a row may perform the effect (invariant 7); everyone else gets the
 * existing claim. Nothing is claimed for a job that is terminal or has no
 * winning output.
 */
export async function claimEffect(db: Pool, claim: { jobId: string; name: string; owner: string; leaseMs: number }): Promise<ClaimResult> {
  const claimed = await inTransaction(db, async (tx) => {
    // The job row is locked first, as cancelJob does: a cancellation and a
    // claim cannot both succeed.
    const { rowCount: open } = await tx.query('SELECT 1 FROM jobs WHERE id = $1 AND terminal_at IS NULL AND completed_by IS NOT NULL FOR UPDATE', [claim.jobId]);
    if (!open) return undefined;
    return claimEffectLocked(tx, claim);
  });
  return claimed ? { claimed: true, effect: claimed } : { claimed: false, effect: await getEffect(db, claim.jobId, claim.name) };
}

/**
 * The claim inside the caller's transaction, which holds the job row and has
 * checked that the job has its winner and is open (claimEffect, or the
 * winning compare-and-swap itself).
 * @returns the claimed effect, or undefined when someone else holds it.
 */
export async function claimEffectLocked(tx: PoolClient, claim: { jobId: string; name: string; owner: string; leaseMs: number }): Promise<EffectRecord | undefined> {
  // Invariant 7: claim before effect. The insert's conflict tells exactly one
  // caller that it won; only that caller may perform the effect (ledger_claim_effect, migration 0023).
  const { rows } = await tx.query<EffectRow>(
    prepared(`SELECT ${COLUMN_NAMES} FROM ledger_claim_effect($1, $2, $3, $4, $5)`, [claim.jobId, claim.name, effectKey(claim.jobId, claim.name), claim.owner, claim.leaseMs]),
  );
  return rows[0] ? toEffect(rows[0]) : undefined;
}

/**
 * Takes over a stale pending effect: a compare-and-swap on the lease that
 * succeeds only once it has expired (invariant 8). A valid lease is never
 * stolen. The effect comes back with the phase it was left in, read by the
 * same statement, so the new owner knows whether anything may have been sent.
 * Only the first takeover writes an event: a downstream that stays
 * unreachable must not grow the job's history (the row counts the owners).
 * @returns the effect under its new owner, or undefined when it was not stale.
 */
export async function takeOverEffect(db: Pool, takeover: { effectId: string; owner: string; leaseMs: number }): Promise<EffectRecord | undefined> {
  return inTransaction(db, async (tx) => {
    await lockJobOfEffect(tx, takeover.effectId);
    const { rows } = await tx.query<EffectRow>(
      `WITH taken AS (
         UPDATE effects SET lease_owner = $2, lease_expires_at = now() + $3 * interval '1 millisecond', owners = owners + 1, updated_at = now()
         WHERE id = $1 AND status = 'pending' AND lease_expires_at < now()
         RETURNING ${COLUMNS}
       ), recovered AS (
         INSERT INTO job_events (job_id, type, detail)
         SELECT job_id, '${JobEventType.effectRecovered}', jsonb_build_object('name', name, 'owner', lease_owner, 'owners', owners, 'phase', phase) FROM taken
         WHERE owners = 2
       )
       SELECT * FROM taken`,
      [takeover.effectId, takeover.owner, takeover.leaseMs],
    );
    return rows[0] ? toEffect(rows[0]) : undefined;
  });
}

/**
 * The owner is about to send a try: the phase becomes `sending` first, so a
 * crash from here on leaves an effect that recovery must look up, never
 * blindly perform (invariant 8).
 * @returns the number of this try (1 for the first, across owners), or
 * undefined when the caller no longer holds the lease (nothing may be sent).
 */
export async function beginEffectTry(db: Queryable, effectId: string, owner: string): Promise<number | undefined> {
  // One statement: it locks the effect row alone (the job row is not needed: a
  // settlement, which takes the job row first, then waits for this one).
  const { rows } = await db.query<{ tries: number }>(
    prepared(
      `UPDATE effects SET phase = 'sending', tries = tries + 1, updated_at = now()
     WHERE id = $1 AND status = 'pending' AND lease_owner = $2
     RETURNING tries`,
      [effectId, owner],
    ),
  );
  return rows[0]?.tries;
}

/**
 * The downstream refused the last try before acting: a new try is safe. With
 * `retryInMs`, the lease runs until then, and whoever holds the effect next
 * tries again (the runner does not sleep past its own budget).
 * @returns false when the caller no longer holds the lease.
 */
export async function noteEffectNotPerformed(db: Pool, effectId: string, owner: string, error: Record<string, unknown>, retryInMs?: number): Promise<boolean> {
  return inTransaction(db, async (tx) => {
    await lockJobOfEffect(tx, effectId);
    const { rows } = await tx.query(
      `WITH noted AS (
         UPDATE effects SET phase = 'not_performed', error = $3, updated_at = now(),
                lease_expires_at = CASE WHEN $4::bigint IS NULL THEN lease_expires_at ELSE now() + $4 * interval '1 millisecond' END
          WHERE id = $1 AND status = 'pending' AND lease_owner = $2 AND phase = 'sending'
          RETURNING job_id, name, tries
       ), event AS (
         INSERT INTO job_events (job_id, type, detail)
         SELECT job_id, '${JobEventType.effectNotPerformed}', jsonb_build_object('name', name, 'try', tries) || $3::jsonb FROM noted
       )
       SELECT 1 FROM noted`,
      [effectId, owner, JSON.stringify(error), retryInMs ?? null],
    );
    return rows.length === 1;
  });
}

/** Records why the last try is ambiguous; the phase stays `sending` (only a receipt can tell). */
export async function noteEffectAmbiguous(db: Pool, effectId: string, owner: string, error: Record<string, unknown>): Promise<void> {
  await inTransaction(db, async (tx) => {
    await lockJobOfEffect(tx, effectId);
    await tx.query(
      `WITH noted AS (
         UPDATE effects SET error = $3, updated_at = now() WHERE id = $1 AND status = 'pending' AND lease_owner = $2
          RETURNING job_id, name, tries
       )
       INSERT INTO job_events (job_id, type, detail)
       SELECT job_id, '${JobEventType.effectAmbiguous}', jsonb_build_object('name', name, 'try', tries) || $3::jsonb FROM noted`,
      [effectId, owner, JSON.stringify(error)],
    );
  });
}

/**
 * Records what a receipt lookup answered (found or not): the effect shows its
 * last lookup, and the failures counted toward the bound start again (they
 * count lookups that failed in a row).
 */
export async function noteLookup(db: Pool, effectId: string, owner: string, found: boolean): Promise<void> {
  await inTransaction(db, async (tx) => {
    await lockJobOfEffect(tx, effectId);
    await tx.query(`UPDATE effects SET last_lookup = jsonb_build_object('at', now(), 'found', $3::boolean), lookup_failures = 0, updated_at = now() WHERE id = $1 AND status = 'pending' AND lease_owner = $2`, [
      effectId,
      owner,
      found,
    ]);
  });
}

/**
 * A receipt lookup that could not answer: counted on the row, not as an event,
 * so an unreachable downstream costs one row update per lease, not a growing history.
 * @returns the failures counted so far, or undefined when the caller no longer holds the lease.
 */
export async function noteLookupFailure(db: Pool, effectId: string, owner: string, error: string): Promise<number | undefined> {
  return inTransaction(db, async (tx) => {
    await lockJobOfEffect(tx, effectId);
    const { rows } = await tx.query<{ lookup_failures: number }>(
      `UPDATE effects SET lookup_failures = lookup_failures + 1, last_lookup = jsonb_build_object('at', now(), 'error', $3::text), updated_at = now()
       WHERE id = $1 AND status = 'pending' AND lease_owner = $2
       RETURNING lookup_failures`,
      [effectId, owner, error.slice(0, 500)],
    );
    return rows[0]?.lookup_failures;
  });
}

/** Extends the lease its owner holds. False when the owner no longer holds it. */
export async function renewLease(db: Pool, effectId: string, owner: string, leaseMs: number): Promise<boolean> {
  return inTransaction(db, async (tx) => {
    await lockJobOfEffect(tx, effectId);
    const { rowCount } = await tx.query(
      `UPDATE effects SET lease_expires_at = now() + $3 * interval '1 millisecond', updated_at = now()
       WHERE id = $1 AND status = 'pending' AND lease_owner = $2`,
      [effectId, owner, leaseMs],
    );
    return rowCount === 1;
  });
}

/**
 * Locks the job row of an effect. Every effect write takes the job row first
 * (the details trigger writes it too, and claims and cancellations lock it),
 * so concurrent writes of one job queue up instead of deadlocking.
 */
export async function lockJobOfEffect(tx: PoolClient, effectId: string): Promise<void> {
  await tx.query('SELECT 1 FROM jobs WHERE id = (SELECT job_id FROM effects WHERE id = $1) FOR UPDATE', [effectId]);
}

export interface Settlement {
  effectId: string;
  owner: string;
  status: Exclude<EffectStatus, 'pending'>;
  receipt?: Record<string, unknown>;
  error?: Record<string, unknown>;
}

/**
 * The terminal write of an effect, by its lease holder only.
 * @returns false when the caller no longer holds the lease (nothing written).
 */
export async function settleEffect(db: Pool, settlement: Settlement): Promise<boolean> {
  // One call, its own transaction; it locks the job row first.
  return (await settleEffectAndJob(db, settlement)).settled;
}

/**
 * settleEffect inside the caller's transaction. The call locks the job row
 * first (ledger_settle_effect), or finds it already held by the caller; the
 * row stays held until the caller commits, so a terminal write after it, or
 * record.write's row before it, commits together with this.
 */
export async function settleEffectLocked(db: PoolClient, settlement: Settlement): Promise<boolean> {
  return (await settleEffectAndJob(db, settlement)).settled;
}

/**
 * The terminal write of an effect, by its lease holder only, in one call
 * that is its own transaction when `db` is the pool (ledger_settle_effect,
 * migration 0023): the job row is locked first, and a former owner's late
 * write is refused. With `finish`, the caller knows that this settlement
 * ends the job (its operation's only effect, succeeded): the job's terminal
 * write with `finish.result` goes with it.
 * @returns settled: false when the caller no longer holds the lease (nothing
 * written); ended: the job's outcome when this ended it.
 */
export async function settleEffectAndJob(db: Queryable, settlement: Settlement, finish?: { result: unknown }): Promise<{ settled: boolean; ended?: JobEnded }> {
  const { rows } = await db.query<{ settled: boolean; ended: JobEndedRow | null }>(
    prepared('SELECT settled, ended FROM ledger_settle_effect($1, $2, $3, $4, $5, $6, $7)', [
      settlement.effectId,
      settlement.owner,
      settlement.status,
      settlement.receipt ? JSON.stringify(settlement.receipt) : null,
      settlement.error ? JSON.stringify(settlement.error) : null,
      finish !== undefined,
      finish ? JSON.stringify(finish.result) : null,
    ]),
  );
  const row = rows[0]!;
  return { settled: row.settled, ...(row.ended ? { ended: toJobEnded(row.ended) } : {}) };
}

export class EffectNotFoundError extends Error {
  override name = 'EffectNotFoundError';
}

/** Resolving an effect that is not `needs_review`. Carries the effect as it is. */
export class EffectNotInReviewError extends Error {
  override name = 'EffectNotInReviewError';
  constructor(readonly effect: EffectRecord) {
    super(`effect ${effect.name} is ${effect.status}, not needs_review`);
  }
}

/**
 * An operator settles an effect in review, with who and why (never automatic).
 * @throws EffectNotFoundError, EffectNotInReviewError
 */
export async function resolveEffect(
  db: Pool,
  resolution: { jobId: string; name: string; outcome: 'succeeded' | 'failed'; reason: string; by: string; receipt?: Record<string, unknown> },
): Promise<EffectRecord> {
  return inTransaction(db, async (tx) => {
    // The job row first, as every transition of a job and its children.
    await holdJobRow(tx, resolution.jobId);
    const record = { outcome: resolution.outcome, reason: resolution.reason, by: resolution.by, at: new Date().toISOString() };
    const { rows } = await tx.query<EffectRow>(
      `UPDATE effects SET status = $3, resolution = $4, receipt = COALESCE($5, receipt), settled_at = now(), updated_at = now()
       WHERE job_id = $1 AND name = $2 AND status = 'needs_review'
       RETURNING ${COLUMNS}`,
      [resolution.jobId, resolution.name, resolution.outcome, JSON.stringify(record), resolution.receipt ? JSON.stringify(resolution.receipt) : null],
    );
    if (!rows[0]) {
      const existing = await getEffect(tx, resolution.jobId, resolution.name);
      if (!existing) throw new EffectNotFoundError(`job ${resolution.jobId} has no effect ${resolution.name}`);
      throw new EffectNotInReviewError(existing);
    }
    await appendEvent(tx, resolution.jobId, JobEventType.effectResolved, { name: resolution.name, ...record });
    return toEffect(rows[0]);
  });
}

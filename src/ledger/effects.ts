import type { Pool } from 'pg';
import { inTransaction } from '../db/pool';
import { appendEvent, JobEventType } from './events';
import type { Queryable } from './queryable';

/** An effect's statuses, written once; the type derives from the values. */
export const EffectStatus = {
  pending: 'pending',
  succeeded: 'succeeded',
  failed: 'failed',
  needsReview: 'needs_review',
} as const;
export type EffectStatus = (typeof EffectStatus)[keyof typeof EffectStatus];

export interface EffectRecord {
  id: string;
  jobId: string;
  name: string;
  key: string;
  status: EffectStatus;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  /** Milliseconds until the lease expires, by the database's clock (0 when expired). */
  leaseRemainingMs: number;
  owners: number;
  receipt: Record<string, unknown> | null;
  error: Record<string, unknown> | null;
  resolution: Record<string, unknown> | null;
}

interface EffectRow {
  id: string;
  job_id: string;
  name: string;
  effect_key: string;
  status: EffectStatus;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  lease_remaining_ms: string | null;
  owners: number;
  receipt: Record<string, unknown> | null;
  error: Record<string, unknown> | null;
  resolution: Record<string, unknown> | null;
}

// Lease arithmetic uses the database's clock only, so workers' clocks never disagree about it.
const COLUMNS = `*, GREATEST(0, floor(extract(epoch FROM (lease_expires_at - now())) * 1000))::bigint AS lease_remaining_ms`;

function toEffect(row: EffectRow): EffectRecord {
  return {
    id: row.id,
    jobId: row.job_id,
    name: row.name,
    key: row.effect_key,
    status: row.status,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
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
export async function claimEffect(db: Queryable, claim: { jobId: string; name: string; owner: string; leaseMs: number }): Promise<ClaimResult> {
  // Invariant 7: claim before effect. ON CONFLICT DO NOTHING RETURNING tells
  // exactly one caller that it won; only that caller may perform the effect.
  const { rows } = await db.query<EffectRow>(
    `INSERT INTO effects (job_id, name, effect_key, lease_owner, lease_expires_at)
     SELECT $1, $2, $3, $4, now() + $5 * interval '1 millisecond'
     WHERE EXISTS (SELECT 1 FROM jobs WHERE id = $1 AND terminal_at IS NULL AND completed_by IS NOT NULL)
     ON CONFLICT (job_id, name) DO NOTHING
     RETURNING ${COLUMNS}`,
    [claim.jobId, claim.name, effectKey(claim.jobId, claim.name), claim.owner, claim.leaseMs],
  );
  if (rows[0]) {
    await appendEvent(db, claim.jobId, JobEventType.effectClaimed, { name: claim.name, owner: claim.owner });
    return { claimed: true, effect: toEffect(rows[0]) };
  }
  return { claimed: false, effect: await getEffect(db, claim.jobId, claim.name) };
}

/**
 * Takes over a stale pending effect: a compare-and-swap on the lease that
 * succeeds only once it has expired (invariant 8). A valid lease is never stolen.
 * @returns the effect under its new owner, or undefined when it was not stale.
 */
export async function takeOverEffect(db: Queryable, takeover: { effectId: string; owner: string; leaseMs: number }): Promise<EffectRecord | undefined> {
  // Invariant 8: only an expired lease changes hands, and only to one new owner.
  const { rows } = await db.query<EffectRow>(
    `UPDATE effects SET lease_owner = $2, lease_expires_at = now() + $3 * interval '1 millisecond', owners = owners + 1, updated_at = now()
     WHERE id = $1 AND status = 'pending' AND lease_expires_at < now()
     RETURNING ${COLUMNS}`,
    [takeover.effectId, takeover.owner, takeover.leaseMs],
  );
  if (!rows[0]) return undefined;
  const effect = toEffect(rows[0]);
  await appendEvent(db, effect.jobId, JobEventType.effectRecovered, { name: effect.name, owner: takeover.owner, owners: effect.owners });
  return effect;
}

/** Extends the lease its owner holds. False when the owner no longer holds it. */
export async function renewLease(db: Queryable, effectId: string, owner: string, leaseMs: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE effects SET lease_expires_at = now() + $3 * interval '1 millisecond', updated_at = now()
     WHERE id = $1 AND status = 'pending' AND lease_owner = $2`,
    [effectId, owner, leaseMs],
  );
  return rowCount === 1;
}

export interface Settlement {
  effectId: string;
  owner: string;
  status: Exclude<EffectStatus, 'pending'>;
  receipt?: Record<string, unknown>;
  error?: Record<string, unknown>;
}

/**
 * The terminal write of an effect, by its lease holder only. Pass a
 * transaction client to commit it together with the effect itself
 * (record.write does).
 * @returns false when the caller no longer holds the lease (nothing written).
 */
export async function settleEffect(db: Queryable, settlement: Settlement): Promise<boolean> {
  // Only the current lease holder settles; a former owner's late write is refused.
  const { rows } = await db.query<{ job_id: string; name: string }>(
    `UPDATE effects SET status = $3, receipt = $4, error = $5, settled_at = now(), updated_at = now(),
            lease_owner = NULL, lease_expires_at = NULL
     WHERE id = $1 AND status = 'pending' AND lease_owner = $2
     RETURNING job_id, name`,
    [
      settlement.effectId,
      settlement.owner,
      settlement.status,
      settlement.receipt ? JSON.stringify(settlement.receipt) : null,
      settlement.error ? JSON.stringify(settlement.error) : null,
    ],
  );
  const row = rows[0];
  if (!row) return false;
  await appendEvent(db, row.job_id, settlement.status === 'needs_review' ? JobEventType.effectNeedsReview : JobEventType.effectSettled, {
    name: row.name,
    status: settlement.status,
    ...(settlement.receipt ? { receipt: settlement.receipt } : {}),
    ...(settlement.error ? { error: settlement.error } : {}),
  });
  return true;
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
    const record = { outcome: resolution.outcome, reason: resolution.reason, by: resolution.by, at: new Date().toISOString() };
    const { rows } = await tx.query<EffectRow>(
      `UPDATE effects SET status = $3, resolution = $4, receipt = COALESCE($5, receipt), updated_at = now()
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

import { prepared } from '../db/prepared';
import type { Pool } from 'pg';
import { inTransaction } from '../db/pool';
import { isUniqueViolation } from '../db/errors';
import { JobEventType } from './events';
import type { RouteStep } from '../temporal/contract';
import type { Queryable } from './queryable';

/** What a route version is: the providers file's route, or a canary an operator rolls out. */
export const RouteVersionKind = { baseline: 'baseline', canary: 'canary' } as const;
export type RouteVersionKind = (typeof RouteVersionKind)[keyof typeof RouteVersionKind];

/** A route version's state; a baseline is only ever `recorded`. */
export const RouteVersionState = {
  recorded: 'recorded',
  running: 'running',
  promoted: 'promoted',
  stopped: 'stopped',
  rolledBack: 'rolled_back',
  superseded: 'superseded',
} as const;
export type RouteVersionState = (typeof RouteVersionState)[keyof typeof RouteVersionState];

/** The events of a route version (route_version_events.type). */
export const RouteVersionEventType = {
  started: 'canary.started',
  promoted: 'canary.promoted',
  stopped: 'canary.stopped',
  rolledBack: 'canary.rolled_back',
  superseded: 'canary.superseded',
  /** A superseded version serves new jobs again: the version promoted over it was rolled back. */
  restored: 'canary.restored',
} as const;

/** When a running canary stops: over its last `window` terminal jobs, more than these shares (or counts) of harm. */
export interface CanaryThresholds {
  /** The fixed denominator: the last N terminal jobs the canary served. */
  window: number;
  /** Jobs with a contract violation, percent of the window. */
  contractViolationsPercent: number;
  /** Jobs with an unknown attempt, percent of the window. */
  unknownsPercent: number;
  /** Failed jobs, percent of the window; null: not a stop condition. */
  failedPercent: number | null;
  /** Jobs with an effect in review (an effect that may have happened twice, or not at all), a count: 0 stops at the first. */
  effectsInReview: number;
}

export const DEFAULT_THRESHOLDS: CanaryThresholds = { window: 200, contractViolationsPercent: 2, unknownsPercent: 5, failedPercent: null, effectsInReview: 0 };

export interface RouteVersionRecord {
  operation: string;
  version: string;
  kind: RouteVersionKind;
  steps: RouteStep[];
  state: RouteVersionState;
  owner: string | null;
  shareBp: number | null;
  expiresAt: Date | null;
  thresholds: CanaryThresholds | null;
  previousVersion: string | null;
  reason: string | null;
  changedBy: string | null;
  createdAt: Date;
  promotedAt: Date | null;
  endedAt: Date | null;
}

interface RouteVersionRow {
  operation: string;
  version: string;
  kind: RouteVersionKind;
  steps: RouteStep[];
  state: RouteVersionState;
  owner: string | null;
  share_bp: number | null;
  expires_at: Date | null;
  thresholds: CanaryThresholds | null;
  previous_version: string | null;
  reason: string | null;
  changed_by: string | null;
  created_at: Date;
  promoted_at: Date | null;
  ended_at: Date | null;
}

function toRecord(row: RouteVersionRow): RouteVersionRecord {
  return {
    operation: row.operation,
    version: row.version,
    kind: row.kind,
    steps: row.steps.map((step) => ({ provider: step.provider, model: step.model })),
    state: row.state,
    owner: row.owner,
    shareBp: row.share_bp,
    expiresAt: row.expires_at,
    thresholds: row.thresholds,
    previousVersion: row.previous_version,
    reason: row.reason,
    changedBy: row.changed_by,
    createdAt: row.created_at,
    promotedAt: row.promoted_at,
    endedAt: row.ended_at,
  };
}

/** Who a canary's own stop is recorded as (changed_by, and `by` in its event). */
export const CANARY_ITSELF = 'canary';

/** Another canary of the operation is running (the partial unique index decided). */
export class CanaryAlreadyRunningError extends Error {
  override name = 'CanaryAlreadyRunningError';
  constructor(readonly operation: string, options?: { cause?: unknown }) {
    super(`a canary of ${operation} is already running; promote or stop it first`, options);
  }
}

/** The version name is taken for the operation (a version is never reused, so its jobs stay attributable). */
export class RouteVersionExistsError extends Error {
  override name = 'RouteVersionExistsError';
  constructor(readonly operation: string, readonly version: string, options?: { cause?: unknown }) {
    super(`${operation} already has a route version named ${version}; name the canary anew`, options);
  }
}

/** No such route version. */
export class RouteVersionNotFoundError extends Error {
  override name = 'RouteVersionNotFoundError';
}

/** The version is not in a state the change may leave (it lost a race, or was never there). Carries the version as it is. */
export class RouteVersionStateError extends Error {
  override name = 'RouteVersionStateError';
  constructor(readonly current: RouteVersionRecord, readonly expected: readonly RouteVersionState[]) {
    super(`${current.operation} ${current.version} is ${current.state}${current.reason ? ` (${current.reason})` : ''}; this change needs it ${expected.join(' or ')}`);
  }
}

/**
 * Records each operation's route from the providers file as a baseline
 * version, idempotently: every process that starts does it, and the first one
 * writes it. Jobs that recorded a version can then be run by any worker by
 * looking its steps up by name.
 */
export async function recordBaselineRoutes(db: Queryable, routes: Array<{ operation: string; version: string; steps: readonly RouteStep[] }>): Promise<void> {
  for (const route of routes) {
    if (route.steps.length === 0) continue;
    await db.query(
      `INSERT INTO route_versions (operation, version, kind, steps, state) VALUES ($1, $2, 'baseline', $3, 'recorded')
       ON CONFLICT (operation, version) DO NOTHING`,
      [route.operation, route.version, JSON.stringify(route.steps.map((step) => ({ provider: step.provider, model: step.model })))],
    );
  }
}

/** The steps of a route version, or undefined when it was never recorded. Steps never change once written. */
export async function routeStepsOf(db: Queryable, operation: string, version: string): Promise<RouteStep[] | undefined> {
  const { rows } = await db.query<{ steps: RouteStep[] }>(prepared('SELECT steps FROM route_versions WHERE operation = $1 AND version = $2', [operation, version]));
  return rows[0]?.steps.map((step) => ({ provider: step.provider, model: step.model }));
}

/** The operation's running canary and promoted version, if any: what new jobs are routed by. One read of the two partial unique indexes. */
export async function servingVersions(db: Queryable, operation: string): Promise<{ running?: RouteVersionRecord; promoted?: RouteVersionRecord }> {
  const { rows } = await db.query<RouteVersionRow>(
    `SELECT * FROM route_versions WHERE operation = $1 AND state = 'running'
     UNION ALL
     SELECT * FROM route_versions WHERE operation = $1 AND state = 'promoted'`,
    [operation],
  );
  const records = rows.map(toRecord);
  return {
    ...(records.find((r) => r.state === RouteVersionState.running) ? { running: records.find((r) => r.state === RouteVersionState.running)! } : {}),
    ...(records.find((r) => r.state === RouteVersionState.promoted) ? { promoted: records.find((r) => r.state === RouteVersionState.promoted)! } : {}),
  };
}

/** One route version, or undefined. */
export async function getRouteVersion(db: Queryable, operation: string, version: string): Promise<RouteVersionRecord | undefined> {
  const { rows } = await db.query<RouteVersionRow>('SELECT * FROM route_versions WHERE operation = $1 AND version = $2', [operation, version]);
  return rows[0] ? toRecord(rows[0]) : undefined;
}

/** Every route version, by operation, newest first. */
export async function listRouteVersions(db: Queryable): Promise<RouteVersionRecord[]> {
  const { rows } = await db.query<RouteVersionRow>('SELECT * FROM route_versions ORDER BY operation, created_at DESC, version');
  return rows.map(toRecord);
}

export interface RouteVersionEvent {
  type: string;
  at: Date;
  detail: Record<string, unknown>;
}

/** A route version's events, oldest first. */
export async function routeVersionEvents(db: Queryable, operation: string, version: string): Promise<RouteVersionEvent[]> {
  const { rows } = await db.query<{ type: string; created_at: Date; detail: Record<string, unknown> }>(
    'SELECT type, created_at, detail FROM route_version_events WHERE operation = $1 AND version = $2 ORDER BY id',
    [operation, version],
  );
  return rows.map((row) => ({ type: row.type, at: row.created_at, detail: row.detail }));
}

export interface NewCanary {
  operation: string;
  version: string;
  steps: readonly RouteStep[];
  owner: string;
  shareBp: number;
  expiresAt: Date;
  thresholds: CanaryThresholds;
  previousVersion: string;
  by: string;
  reason?: string;
}

/**
 * Starts a canary. The partial unique index `route_versions_one_running`
 * decides between two starts at once, never a check in this code.
 * @throws CanaryAlreadyRunningError when another canary of the operation runs.
 * @throws RouteVersionExistsError when the name is taken.
 */
export async function startCanary(db: Pool, canary: NewCanary): Promise<RouteVersionRecord> {
  try {
    const { rows } = await db.query<RouteVersionRow>(
      `WITH started AS (
         INSERT INTO route_versions (operation, version, kind, steps, state, owner, share_bp, expires_at, thresholds, previous_version, reason, changed_by)
         VALUES ($1, $2, 'canary', $3, 'running', $4, $5, $6, $7, $8, $9, $10)
         RETURNING *
       ), event AS (
         INSERT INTO route_version_events (operation, version, type, detail)
         SELECT operation, version, '${RouteVersionEventType.started}', $11 FROM started
       )
       SELECT * FROM started`,
      [
        canary.operation,
        canary.version,
        JSON.stringify(canary.steps.map((step) => ({ provider: step.provider, model: step.model }))),
        canary.owner,
        canary.shareBp,
        canary.expiresAt,
        JSON.stringify(canary.thresholds),
        canary.previousVersion,
        canary.reason ?? null,
        canary.by,
        JSON.stringify({ by: canary.by, owner: canary.owner, sharePercent: canary.shareBp / 100, expiresAt: canary.expiresAt.toISOString(), previousVersion: canary.previousVersion, ...(canary.reason ? { reason: canary.reason } : {}) }),
      ],
    );
    return toRecord(rows[0]!);
  } catch (err) {
    if (isUniqueViolation(err, 'route_versions_one_running')) throw new CanaryAlreadyRunningError(canary.operation, { cause: err });
    if (isUniqueViolation(err, 'route_versions_pkey')) throw new RouteVersionExistsError(canary.operation, canary.version, { cause: err });
    throw err;
  }
}

/** Why a canary stopped by itself, or an operator's word. */
export interface StopCause {
  by: string;
  reason: string;
  /** E.g. the threshold crossed and the counts over the window. */
  detail?: Record<string, unknown>;
}

/**
 * Moves a route version from one of `from` to `to`, with its event, in one
 * statement: the WHERE clause is the rule, so of two changes racing (an
 * operator's promote and an automatic stop) exactly one wins.
 * @returns the version after the change, or undefined when it was not in `from` (nothing written).
 */
async function transition(
  db: Queryable,
  key: { operation: string; version: string },
  from: readonly RouteVersionState[],
  to: RouteVersionState,
  eventType: string,
  cause: StopCause,
  opts: { requireUnexpired?: boolean } = {},
): Promise<RouteVersionRecord | undefined> {
  const { rows } = await db.query<RouteVersionRow>(
    `WITH moved AS (
       UPDATE route_versions
          SET state = $4, reason = $5, changed_by = $6,
              promoted_at = CASE WHEN $4 = 'promoted' THEN now() ELSE promoted_at END,
              ended_at = CASE WHEN $4 = 'promoted' THEN ended_at ELSE now() END
        WHERE operation = $1 AND version = $2 AND state = ANY($3::text[])
          AND ($8::boolean IS NOT TRUE OR expires_at > now())
        RETURNING *
     ), event AS (
       INSERT INTO route_version_events (operation, version, type, detail)
       SELECT operation, version, $7, $9 FROM moved
     )
     SELECT * FROM moved`,
    [key.operation, key.version, from, to, cause.reason, cause.by, eventType, opts.requireUnexpired ?? false, JSON.stringify({ by: cause.by, reason: cause.reason, ...(cause.detail ?? {}) })],
  );
  return rows[0] ? toRecord(rows[0]) : undefined;
}

async function refuse(db: Queryable, key: { operation: string; version: string }, expected: readonly RouteVersionState[]): Promise<never> {
  const current = await getRouteVersion(db, key.operation, key.version);
  if (!current) throw new RouteVersionNotFoundError(`${key.operation} has no route version ${key.version}`);
  throw new RouteVersionStateError(current, expected);
}

/**
 * A running canary stops: new jobs go back to the version it was tried
 * against; jobs it admitted stay on it. Used by the automatic stop (threshold,
 * expiry) and by operators.
 * @returns the stopped version, or undefined when it was no longer running (someone else won).
 */
export async function stopCanaryIfRunning(db: Queryable, key: { operation: string; version: string }, cause: StopCause): Promise<RouteVersionRecord | undefined> {
  // Only a running canary stops: a promotion or another stop that won first stands.
  return transition(db, key, [RouteVersionState.running], RouteVersionState.stopped, RouteVersionEventType.stopped, cause);
}

/**
 * Stops the running canaries whose expiry has passed without a promotion (of
 * one operation, or all): new jobs go back to the version they were tried
 * against. The expiry is compared with the database's clock, in the WHERE
 * clause, so every process agrees on it.
 * @returns the canaries stopped by this call.
 */
export async function stopExpiredCanaries(db: Queryable, operation?: string): Promise<RouteVersionRecord[]> {
  const { rows } = await db.query<RouteVersionRow>(
    `WITH moved AS (
       UPDATE route_versions
          SET state = 'stopped', changed_by = '${CANARY_ITSELF}', ended_at = now(),
              reason = format('expired at %s without promotion', to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
        WHERE state = 'running' AND expires_at <= now() AND ($1::text IS NULL OR operation = $1)
        RETURNING *
     ), event AS (
       INSERT INTO route_version_events (operation, version, type, detail)
       SELECT operation, version, '${RouteVersionEventType.stopped}',
              jsonb_build_object('by', '${CANARY_ITSELF}', 'cause', 'expired', 'reason', reason, 'rolledBackTo', previous_version)
         FROM moved
     )
     SELECT * FROM moved`,
    [operation ?? null],
  );
  return rows.map(toRecord);
}

/**
 * An operator's stop. @throws RouteVersionNotFoundError, RouteVersionStateError when not running.
 */
export async function stopCanary(db: Queryable, key: { operation: string; version: string }, cause: StopCause): Promise<RouteVersionRecord> {
  return (await stopCanaryIfRunning(db, key, cause)) ?? refuse(db, key, [RouteVersionState.running]);
}

/**
 * Promotes a running, unexpired canary: it serves every new job; the version
 * promoted before it (if any) is superseded, in the same transaction.
 * @throws RouteVersionNotFoundError; RouteVersionStateError when it is not running (an automatic stop won) or has expired.
 */
export async function promoteCanary(db: Pool, key: { operation: string; version: string }, cause: StopCause): Promise<RouteVersionRecord> {
  return inTransaction(db, async (tx) => {
    // The running canary's row first, so a racing stop waits for this transaction (or this one for it).
    const { rows } = await tx.query<{ state: string }>(`SELECT state FROM route_versions WHERE operation = $1 AND version = $2 FOR UPDATE`, [key.operation, key.version]);
    if (rows[0]?.state !== RouteVersionState.running) return refuse(tx, key, [RouteVersionState.running]);
    await tx.query(
      `WITH moved AS (
         UPDATE route_versions SET state = 'superseded', reason = $3, changed_by = $4, ended_at = now()
          WHERE operation = $1 AND state = 'promoted' AND version <> $2
          RETURNING operation, version
       )
       INSERT INTO route_version_events (operation, version, type, detail)
       SELECT operation, version, '${RouteVersionEventType.superseded}', $5 FROM moved`,
      [key.operation, key.version, `superseded by ${key.version}`, cause.by, JSON.stringify({ by: cause.by, by_version: key.version })],
    );
    // Invariant: only a running canary that has not expired is promoted; an expired one rolls back instead.
    const promoted = await transition(tx, key, [RouteVersionState.running], RouteVersionState.promoted, RouteVersionEventType.promoted, cause, { requireUnexpired: true });
    return promoted ?? refuse(tx, key, [RouteVersionState.running]);
  });
}

/**
 * Rolls a canary back, running or promoted: new jobs go to the version it
 * replaced: a promoted canary's promotion superseded a version (its
 * `canary.superseded` event names the canary), which is promoted again in
 * the same transaction (`canary.restored`), so a rollback after two
 * promotions lands on the first, not on the baseline; a running canary's
 * previous version still serves.
 * @throws RouteVersionNotFoundError, RouteVersionStateError.
 */
export async function rollbackCanary(db: Pool, key: { operation: string; version: string }, cause: StopCause): Promise<RouteVersionRecord> {
  const from = [RouteVersionState.running, RouteVersionState.promoted] as const;
  return inTransaction(db, async (tx) => {
    const rolledBack = await transition(tx, key, from, RouteVersionState.rolledBack, RouteVersionEventType.rolledBack, cause);
    if (!rolledBack) return refuse(tx, key, from);
    // The version this one's promotion superseded (its event names this one), whatever it was started against.
    await tx.query(
      `WITH moved AS (
         UPDATE route_versions SET state = 'promoted', reason = $3, changed_by = $4, ended_at = NULL
          WHERE operation = $1 AND state = 'superseded'
            AND version = (SELECT e.version FROM route_version_events e
                            WHERE e.operation = $1 AND e.type = '${RouteVersionEventType.superseded}' AND e.detail ->> 'by_version' = $2
                            ORDER BY e.id DESC LIMIT 1)
          RETURNING operation, version
       )
       INSERT INTO route_version_events (operation, version, type, detail)
       SELECT operation, version, '${RouteVersionEventType.restored}', $5 FROM moved`,
      [key.operation, key.version, `restored: ${key.version} was rolled back`, cause.by, JSON.stringify({ by: cause.by, rolledBack: key.version })],
    );
    return rolledBack;
  });
}

/** A route version's jobs, by how they ended: the same denominators the job-outcome metrics use. */
export interface RouteVersionCounts {
  jobs: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  withUnknowns: number;
  withContractViolations: number;
  withEffectsInReview: number;
}

const COUNTS_SELECT = `count(*)::int AS jobs,
       count(*) FILTER (WHERE j.status = 'succeeded')::int AS succeeded,
       count(*) FILTER (WHERE j.status = 'failed')::int AS failed,
       count(*) FILTER (WHERE j.status = 'cancelled')::int AS cancelled,
       count(*) FILTER (WHERE EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = j.id AND e.type = '${JobEventType.attemptUnknown}'))::int AS with_unknowns,
       count(*) FILTER (WHERE EXISTS (SELECT 1 FROM attempts a WHERE a.job_id = j.id AND a.error_class = 'contract_violation'))::int AS with_contract_violations,
       count(*) FILTER (WHERE EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = j.id AND e.type = '${JobEventType.effectNeedsReview}'))::int AS with_effects_in_review`;

interface CountsRow {
  jobs: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  with_unknowns: number;
  with_contract_violations: number;
  with_effects_in_review: number;
}

const toCounts = (row: CountsRow): RouteVersionCounts => ({
  jobs: row.jobs,
  succeeded: row.succeeded,
  failed: row.failed,
  cancelled: row.cancelled,
  withUnknowns: row.with_unknowns,
  withContractViolations: row.with_contract_violations,
  withEffectsInReview: row.with_effects_in_review,
});

/**
 * The last `window` jobs a version served that ended or wait for an
 * operator (an unknown attempt, an effect in review), by how they ended or
 * what they wait on: what a canary's thresholds are checked against, read
 * from the ledger (exact, whichever process wrote them). A job that waits
 * counts at once: a canary whose primary black-holes requests never ends a
 * job, and must stop all the same. Waiting jobs come first (they are harm
 * now), then the most recently ended. Each branch reads at most `window`
 * rows through an index (waiting jobs through jobs_status_created_idx and
 * effects_needs_review_idx, ended ones through jobs_route_version_idx), so
 * the jobs still running are never read.
 */
export async function windowCounts(db: Queryable, operation: string, version: string, window: number): Promise<RouteVersionCounts> {
  const { rows } = await db.query<CountsRow>(
    `SELECT ${COUNTS_SELECT}
       FROM (SELECT id, status FROM (
               ((SELECT id, status, 0 AS waiting_last, NULL::timestamptz AS terminal_at FROM jobs
                  WHERE status = 'awaiting_resolution' AND operation = $1 AND route_version = $2 LIMIT $3)
                UNION
                (SELECT j.id, j.status, 0, NULL FROM effects f JOIN jobs j ON j.id = f.job_id
                  WHERE f.status = 'needs_review' AND j.operation = $1 AND j.route_version = $2 AND j.terminal_at IS NULL LIMIT $3))
               UNION ALL
               (SELECT id, status, 1, terminal_at FROM jobs
                 WHERE operation = $1 AND route_version = $2 AND terminal_at IS NOT NULL
                 ORDER BY terminal_at DESC LIMIT $3)
             ) served ORDER BY waiting_last, terminal_at DESC LIMIT $3) j`,
    [operation, version, window],
  );
  return toCounts(rows[0]!);
}

/** Jobs admitted to a version, and how many of them are still open. */
export async function admittedCounts(db: Queryable, operation: string, version: string): Promise<{ admitted: number; open: number }> {
  const { rows } = await db.query<{ admitted: number; open: number }>(
    `SELECT count(*)::int AS admitted, count(*) FILTER (WHERE terminal_at IS NULL)::int AS open
       FROM jobs WHERE operation = $1 AND route_version = $2`,
    [operation, version],
  );
  return rows[0]!;
}

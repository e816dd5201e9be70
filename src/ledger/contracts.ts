import { prepared } from '../db/prepared';
import { jobColumns, type JobRow, type LockedJob, toLockedJob } from './job-row';
import type { Queryable } from './queryable';

export interface ContractKey {
  operation: string;
  schemaVersion: number;
  templateHash: string;
  provider: string;
  model: string;
}

export interface VerificationRecord extends ContractKey {
  verifiedAt: Date;
  passed: boolean;
  samples: number;
  evidence: Record<string, unknown>;
}

interface VerificationRow {
  operation: string;
  schema_version: number;
  template_hash: string;
  provider: string;
  model: string;
  verified_at: Date;
  passed: boolean;
  samples: number;
  evidence: Record<string, unknown>;
}

/** The columns of VerificationRow, named: a prepared statement's result may not change when a newer migration adds a column. */
const VERIFICATION_COLUMNS = 'operation, schema_version, template_hash, provider, model, verified_at, passed, samples, evidence';

const toRecord = (row: VerificationRow): VerificationRecord => ({
  operation: row.operation,
  schemaVersion: row.schema_version,
  templateHash: row.template_hash,
  provider: row.provider,
  model: row.model,
  verifiedAt: row.verified_at,
  passed: row.passed,
  samples: row.samples,
  evidence: row.evidence,
});

export async function recordVerification(db: Queryable, verification: Omit<VerificationRecord, 'verifiedAt'>): Promise<VerificationRecord> {
  const { rows } = await db.query<VerificationRow>(
    `INSERT INTO provider_contracts (operation, schema_version, template_hash, provider, model, passed, samples, evidence)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
    [verification.operation, verification.schemaVersion, verification.templateHash, verification.provider, verification.model, verification.passed, verification.samples, JSON.stringify(verification.evidence)],
  );
  return toRecord(rows[0]!);
}

/** The newest verification of a provider and model for an operation, whatever its version or template. */
export async function latestVerification(db: Queryable, key: Pick<ContractKey, 'operation' | 'provider' | 'model'>): Promise<VerificationRecord | undefined> {
  const { rows } = await db.query<VerificationRow>(
    `SELECT * FROM provider_contracts WHERE operation = $1 AND provider = $2 AND model = $3 ORDER BY verified_at DESC, id DESC LIMIT 1`,
    [key.operation, key.provider, key.model],
  );
  return rows[0] ? toRecord(rows[0]) : undefined;
}

export interface RuntimeRecord {
  /** Ended attempts looked at (newest first, up to the window). */
  ended: number;
  violations: number;
  lastViolationAt: Date | null;
}

/**
 * The run-time record's statement: the newest ended attempts of one
 * operation, provider and model, read from attempts_runtime_idx alone.
 */
export const RUNTIME_RECORD_SQL = `SELECT count(*) AS ended,
            count(*) FILTER (WHERE recent.error_class = 'contract_violation') AS violations,
            max(recent.ended_at) FILTER (WHERE recent.error_class = 'contract_violation') AS last_violation_at
     FROM (
       SELECT a.error_class, a.ended_at FROM attempts a
       WHERE a.operation = $1 AND a.provider = $2 AND a.model = $3 AND a.status IN ('succeeded', 'failed', 'discarded') AND a.ended_at IS NOT NULL
       ORDER BY a.ended_at DESC LIMIT $4
     ) recent`;

/** What eligibility weighs of one provider and model for an operation: its run-time record and its current verification. */
export interface ProviderStanding {
  runtime: RuntimeRecord;
  /** The newest verification for exactly the operation's schema version and template hash, if any. */
  current?: VerificationRecord;
}

/**
 * The standing's statement: the run-time record (RUNTIME_RECORD_SQL, $1–$4)
 * beside the newest verification for the schema version ($5) and template
 * hash ($6), with its columns named; no verification leaves them NULL.
 */
const STANDING_SQL = `SELECT record.ended, record.violations, record.last_violation_at, ${VERIFICATION_COLUMNS.split(', ').map((column) => `verification.${column}`).join(', ')}
     FROM (${RUNTIME_RECORD_SQL}) record
     LEFT JOIN LATERAL (
       SELECT ${VERIFICATION_COLUMNS} FROM provider_contracts
       WHERE operation = $1 AND provider = $2 AND model = $3 AND schema_version = $5 AND template_hash = $6
       ORDER BY verified_at DESC, id DESC LIMIT 1
     ) verification ON true`;

/**
 * How a provider and model have kept the contract at run time lately (over
 * the newest `window` ended attempts), and its current verification: one
 * prepared statement, as every attempt's opening reads it (eligibility).
 */
export async function providerStanding(db: Queryable, key: ContractKey, window: number): Promise<ProviderStanding> {
  const { rows } = await db.query<StandingRow>(prepared(STANDING_SQL, standingValues(key, window)));
  return standingOf(rows[0]!);
}

/**
 * A job row, as peekJobRow reads it with its input, and the standing of the
 * provider and model its route is expected to open with: one prepared
 * statement, a new job's first read. The caller checks that the job's route
 * does open with that step before it relies on the standing.
 */
export async function jobAndStanding(db: Queryable, jobId: string, key: ContractKey, window: number): Promise<{ job?: LockedJob; standing: ProviderStanding }> {
  const { rows } = await db.query<StandingRow & { job: JobRow | null }>(
    prepared(`SELECT standing.*, (SELECT row_to_json(j) FROM (SELECT ${jobColumns(true)} FROM jobs WHERE id = $7) j) AS job FROM (${STANDING_SQL}) standing`, [
      ...standingValues(key, window),
      jobId,
    ]),
  );
  const row = rows[0]!;
  return { ...(row.job ? { job: toLockedJob(row.job) } : {}), standing: standingOf(row) };
}

/** A row of STANDING_SQL: without a verification, its columns are NULL (verified_at is NOT NULL in a row of provider_contracts). */
type StandingRow = { ended: string; violations: string; last_violation_at: Date | null } & { [column in keyof VerificationRow]: VerificationRow[column] | null };

const standingValues = (key: ContractKey, window: number) => [key.operation, key.provider, key.model, window, key.schemaVersion, key.templateHash];

function standingOf(row: StandingRow): ProviderStanding {
  const runtime = { ended: Number(row.ended), violations: Number(row.violations), lastViolationAt: row.last_violation_at };
  return row.verified_at === null ? { runtime } : { runtime, current: toRecord(row as VerificationRow) };
}

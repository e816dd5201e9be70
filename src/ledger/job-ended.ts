import { prepared } from '../db/prepared';
import type { Queryable } from './queryable';

/** What a terminal job is counted under: its status and the harms it had on the way. */
export interface JobEnded {
  operation: string;
  routeVersion: string | null;
  status: string;
  withUnknowns: boolean;
  withContractViolations: boolean;
  withEffectsInReview: boolean;
}

/** The columns of ledger_job_ended (migration 0023): a terminal job's outcome, with the harms read from its child tables. */
export const JOB_ENDED_COLUMNS = 'operation, route_version, status, with_unknowns, with_contract_violations, with_effects_in_review';

export interface JobEndedRow {
  operation: string;
  route_version: string | null;
  status: string;
  with_unknowns: boolean;
  with_contract_violations: boolean;
  with_effects_in_review: boolean;
}

export function toJobEnded(row: JobEndedRow): JobEnded {
  return {
    operation: row.operation,
    routeVersion: row.route_version,
    status: row.status,
    withUnknowns: row.with_unknowns,
    withContractViolations: row.with_contract_violations,
    withEffectsInReview: row.with_effects_in_review,
  };
}

/** A terminal job's outcome as the ledger has it, or undefined while the job is open (or gone). */
export async function readJobEnded(db: Queryable, jobId: string): Promise<JobEnded | undefined> {
  const { rows } = await db.query<JobEndedRow>(prepared(`SELECT ${JOB_ENDED_COLUMNS} FROM ledger_job_ended($1)`, [jobId]));
  return rows[0] ? toJobEnded(rows[0]) : undefined;
}

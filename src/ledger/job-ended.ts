import { prepared } from '../db/prepared';
import { JobEventType } from './events';
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

/** A terminal job's outcome as columns of its jobs row `j` (the harms read from its child tables). */
export const JOB_ENDED_COLUMNS = `j.operation, j.route_version, j.status,
       EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = j.id AND e.type = '${JobEventType.attemptUnknown}') AS with_unknowns,
       EXISTS (SELECT 1 FROM attempts a WHERE a.job_id = j.id AND a.error_class = 'contract_violation') AS with_contract_violations,
       EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = j.id AND e.type = '${JobEventType.effectNeedsReview}') AS with_effects_in_review`;

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
  const { rows } = await db.query<JobEndedRow>(prepared(`SELECT ${JOB_ENDED_COLUMNS} FROM jobs j WHERE j.id = $1 AND j.terminal_at IS NOT NULL`, [jobId]));
  return rows[0] ? toJobEnded(rows[0]) : undefined;
}

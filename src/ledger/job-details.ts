import { toJobRecord, type JobRecord } from './jobs';
import type { JobScope } from '../jobs/scope';
import type { Queryable } from './queryable';

export interface EventDetail {
  type: string;
  at: string;
  detail: Record<string, unknown>;
}

/** A job with everything its API view shows, read in one statement. */
export interface JobDetails {
  job: JobRecord;
  events: EventDetail[];
}

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

// One round trip for the whole view: replays are answered from this alone.
const DETAILS_SQL = `
  SELECT j.*,
    COALESCE((
      SELECT json_agg(json_build_object('type', e.type, 'at', to_char(e.created_at AT TIME ZONE 'UTC', ${ISO}), 'detail', e.detail) ORDER BY e.id)
      FROM job_events e WHERE e.job_id = j.id
    ), '[]'::json) AS details_events
  FROM jobs j`;

type DetailsRow = Parameters<typeof toJobRecord>[0] & { details_events: EventDetail[] };

function toDetails(row: DetailsRow | undefined): JobDetails | undefined {
  if (!row) return undefined;
  return { job: toJobRecord(row), events: row.details_events };
}

/** A job and its details by id, or undefined. */
export async function loadJobDetailsById(db: Queryable, id: string): Promise<JobDetails | undefined> {
  const { rows } = await db.query<DetailsRow>(`${DETAILS_SQL} WHERE j.id = $1`, [id]);
  return toDetails(rows[0]);
}

/** The job of a scope and its details, or undefined. */
export async function loadJobDetailsByScope(db: Queryable, scope: JobScope): Promise<JobDetails | undefined> {
  const { rows } = await db.query<DetailsRow>(`${DETAILS_SQL} WHERE j.principal_id = $1 AND j.operation = $2 AND j.idempotency_key = $3`, [
    scope.principalId,
    scope.operation,
    scope.idempotencyKey,
  ]);
  return toDetails(rows[0]);
}

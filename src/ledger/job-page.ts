import type { JobStatus } from '../jobs/status';

/** A job as a page of jobs shows it (the operators' list, the console's search). */
export interface JobPageItem {
  id: string;
  principalId: string;
  operation: string;
  idempotencyKey: string;
  status: JobStatus;
  createdAt: Date;
  updatedAt: Date;
  /** (created_at, id) to the microsecond: where the next page starts. */
  position: { createdAt: string; id: string };
}

export interface JobPageRow {
  id: string;
  principal_id: string;
  operation: string;
  idempotency_key: string;
  status: JobStatus;
  created_at: Date;
  updated_at: Date;
  position: string;
}

/** The columns of a JobPageRow, from `jobs j`; `position` is created_at to the microsecond, as text (a Date keeps milliseconds). */
export const JOB_PAGE_COLUMNS = `j.id, j.principal_id, j.operation, j.idempotency_key, j.status, j.created_at, j.updated_at,
            to_char(j.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS position`;

export function toJobPageItem(row: JobPageRow): JobPageItem {
  return {
    id: row.id,
    principalId: row.principal_id,
    operation: row.operation,
    idempotencyKey: row.idempotency_key,
    status: row.status,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    position: { createdAt: row.position, id: row.id },
  };
}

/** Positional parameters for a statement built from parts: `param(value)` adds one and returns its `$n`. */
export function sqlParams(): { params: unknown[]; param(value: unknown): string } {
  const params: unknown[] = [];
  return {
    params,
    param(value) {
      params.push(value);
      return `$${params.length}`;
    },
  };
}

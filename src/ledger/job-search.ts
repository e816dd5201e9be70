import { JobStatus } from '../jobs/status';
import type { Queryable } from './queryable';

/** What an operator searches jobs by; every field narrows, none is required but one must be given. */
export interface JobSearch {
  /** A job id, whole or its first characters (at least 4), or an idempotency key. */
  text?: string;
  principalId?: string;
  operation?: string;
  status?: JobStatus;
  /** Jobs older than this place only (the next page). */
  before?: { createdAt: string; id: string };
  limit: number;
}

export interface JobSearchHit {
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ID_PREFIX = /^[0-9a-f][0-9a-f-]{3,35}$/i;

/** Whether the search names something; a search of nothing would be a scan of every job. */
export const searchNamesSomething = (search: Omit<JobSearch, 'limit' | 'before'>): boolean =>
  Boolean(search.text || search.principalId || search.operation || search.status);

/**
 * Jobs matching a search, newest first, in (created_at, id) order; up to
 * `limit` + 1 rows (the extra one says there is a next page). Each criterion
 * has its index: a whole id the primary key; an id prefix jobs_id_text_idx
 * (LIKE 'prefix%' on id::text, text_pattern_ops); an idempotency key
 * jobs_idempotency_key_idx; a principal jobs_principal_created_idx and an
 * operation jobs_operation_created_idx, both already in the order the page
 * wants; a status jobs_status_created_idx.
 */
export async function searchJobs(db: Queryable, search: JobSearch): Promise<JobSearchHit[]> {
  const params: unknown[] = [];
  const param = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const where: string[] = [];
  const text = search.text?.trim();
  if (text) {
    if (UUID.test(text)) where.push(`(j.id = ${param(text.toLowerCase())}::uuid OR j.idempotency_key = ${param(text)})`);
    else if (ID_PREFIX.test(text)) where.push(`(j.id::text LIKE ${param(`${text.toLowerCase()}%`)} OR j.idempotency_key = ${param(text)})`);
    else where.push(`j.idempotency_key = ${param(text)}`);
  }
  if (search.principalId) where.push(`j.principal_id = ${param(search.principalId)}`);
  if (search.operation) where.push(`j.operation = ${param(search.operation)}`);
  if (search.status) where.push(`j.status = ${param(search.status)}`);
  if (where.length === 0) throw new Error('a job search needs at least one criterion');
  if (search.before) where.push(`(j.created_at, j.id) < (${param(search.before.createdAt)}::timestamptz, ${param(search.before.id)}::uuid)`);
  const { rows } = await db.query<{
    id: string;
    principal_id: string;
    operation: string;
    idempotency_key: string;
    status: JobStatus;
    created_at: Date;
    updated_at: Date;
    position: string;
  }>(
    `SELECT j.id, j.principal_id, j.operation, j.idempotency_key, j.status, j.created_at, j.updated_at,
            to_char(j.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS position
       FROM jobs j
      WHERE ${where.join(' AND ')}
      ORDER BY j.created_at DESC, j.id DESC
      LIMIT ${param(search.limit + 1)}`,
    params,
  );
  return rows.map((row) => ({
    id: row.id,
    principalId: row.principal_id,
    operation: row.operation,
    idempotencyKey: row.idempotency_key,
    status: row.status,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    position: { createdAt: row.position, id: row.id },
  }));
}

import type { JobStatus } from '../jobs/status';
import { JOB_PAGE_COLUMNS, sqlParams, toJobPageItem, type JobPageItem, type JobPageRow } from './job-page';
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

export type JobSearchHit = JobPageItem;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The first characters of a UUID as it is written (hyphens where a UUID has them), at least 4. */
const ID_PREFIX = /^(?=.{4,35}$)[0-9a-f]{1,8}(-[0-9a-f]{0,4}(-[0-9a-f]{0,4}(-[0-9a-f]{0,4}(-[0-9a-f]{0,12})?)?)?)?$/i;

const asUuid = (hex: string): string => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;

/**
 * The ids that begin with `prefix`, as a range of UUIDs: from the prefix
 * filled with 0s, up to (not including) the next prefix filled with 0s, or to
 * the end when the prefix is all f. UUIDs compare byte by byte, which is the
 * order of their hex digits, so the primary key serves the range.
 */
export function idPrefixRange(prefix: string): { from: string; below?: string } {
  const hex = prefix.toLowerCase().replace(/-/g, '');
  const next = (BigInt(`0x${hex}`) + 1n).toString(16).padStart(hex.length, '0');
  return { from: asUuid(hex.padEnd(32, '0')), ...(next.length > hex.length ? {} : { below: asUuid(next.padEnd(32, '0')) }) };
}

/** Whether the search names something; a search of nothing would be a scan of every job. */
export const searchNamesSomething = (search: Omit<JobSearch, 'limit' | 'before'>): boolean =>
  Boolean(search.text || search.principalId || search.operation || search.status);

/**
 * Jobs matching a search, newest first, in (created_at, id) order; up to
 * `limit` + 1 rows (the extra one says there is a next page). Each criterion
 * has its index: a whole id the primary key; an id prefix the primary key
 * too, as a range (idPrefixRange); an idempotency key
 * jobs_idempotency_key_idx; a principal jobs_principal_created_idx and an
 * operation jobs_operation_created_idx, both already in the order the page
 * wants; a status jobs_status_created_idx.
 */
export async function searchJobs(db: Queryable, search: JobSearch): Promise<JobSearchHit[]> {
  const { params, param } = sqlParams();
  const where: string[] = [];
  const text = search.text?.trim();
  if (text) {
    if (UUID.test(text)) where.push(`(j.id = ${param(text.toLowerCase())}::uuid OR j.idempotency_key = ${param(text)})`);
    else if (ID_PREFIX.test(text)) {
      const range = idPrefixRange(text);
      const ids = `j.id >= ${param(range.from)}::uuid${range.below ? ` AND j.id < ${param(range.below)}::uuid` : ''}`;
      where.push(`((${ids}) OR j.idempotency_key = ${param(text)})`);
    }
    else where.push(`j.idempotency_key = ${param(text)}`);
  }
  if (search.principalId) where.push(`j.principal_id = ${param(search.principalId)}`);
  if (search.operation) where.push(`j.operation = ${param(search.operation)}`);
  if (search.status) where.push(`j.status = ${param(search.status)}`);
  if (where.length === 0) throw new Error('a job search needs at least one criterion');
  if (search.before) where.push(`(j.created_at, j.id) < (${param(search.before.createdAt)}::timestamptz, ${param(search.before.id)}::uuid)`);
  const { rows } = await db.query<JobPageRow>(
    `SELECT ${JOB_PAGE_COLUMNS}
       FROM jobs j
      WHERE ${where.join(' AND ')}
      ORDER BY j.created_at DESC, j.id DESC
      LIMIT ${param(search.limit + 1)}`,
    params,
  );
  return rows.map(toJobPageItem);
}

import { JobStatus } from '../jobs/status';
import { JOB_PAGE_COLUMNS, sqlParams, toJobPageItem, type JobPageItem, type JobPageRow } from './job-page';
import type { Queryable } from './queryable';

/**
 * What an operator lists by: a job status, or needs_review, which is an
 * effect's status: the jobs with an effect waiting in review.
 */
export const NEEDS_REVIEW = 'needs_review';
export const LISTABLE_STATUSES = [...Object.values(JobStatus), NEEDS_REVIEW] as const;
export type ListableStatus = (typeof LISTABLE_STATUSES)[number];

/** A place in the list's order, (created_at, id); created_at to the microsecond, as PostgreSQL keeps it. */
export interface ListPosition {
  createdAt: string;
  id: string;
}

export interface JobListFilter {
  status: ListableStatus;
  principalId?: string;
  operation?: string;
  /** Jobs after this place only. */
  after?: ListPosition;
  limit: number;
}

export interface JobListItem extends JobPageItem {
  workflowId: string;
  effectsInReview: string[];
}

interface Row extends JobPageRow {
  workflow_id: string;
  effects_in_review: string[];
}

/**
 * One page of jobs across principals, oldest first, in (created_at, id)
 * order, so a page read after inserts goes on where the last one stopped.
 * A job status is read through jobs_status_created_idx (status, created_at,
 * id); needs_review through effects_needs_review_idx, then each job by its
 * primary key. Returns up to `limit` + 1 rows: the extra one says there is a
 * next page.
 */
export async function listJobs(db: Queryable, filter: JobListFilter): Promise<JobListItem[]> {
  const { params, param } = sqlParams();
  const where =
    filter.status === NEEDS_REVIEW
      ? [`j.id IN (SELECT e.job_id FROM effects e WHERE e.status = 'needs_review')`]
      : [`j.status = ${param(filter.status)}`];
  if (filter.principalId !== undefined) where.push(`j.principal_id = ${param(filter.principalId)}`);
  if (filter.operation !== undefined) where.push(`j.operation = ${param(filter.operation)}`);
  if (filter.after) where.push(`(j.created_at, j.id) > (${param(filter.after.createdAt)}::timestamptz, ${param(filter.after.id)}::uuid)`);
  const { rows } = await db.query<Row>(
    `SELECT ${JOB_PAGE_COLUMNS}, j.workflow_id,
            ARRAY(SELECT e.name FROM effects e WHERE e.job_id = j.id AND e.status = 'needs_review' ORDER BY e.name) AS effects_in_review
       FROM jobs j
      WHERE ${where.join(' AND ')}
      ORDER BY j.created_at, j.id
      LIMIT ${param(filter.limit + 1)}`,
    params,
  );
  return rows.map((row) => ({ ...toJobPageItem(row), workflowId: row.workflow_id, effectsInReview: row.effects_in_review }));
}

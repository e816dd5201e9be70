import type { Queryable } from './queryable';

/**
 * Removes terminal jobs older than the retention, with their attempts,
 * effects and events (ON DELETE CASCADE), in batches. A job with an effect
 * still pending or in review is kept whatever its age. After removal, the
 * job's key is free again: the same key then starts a new intent.
 * @returns how many jobs were removed.
 */
export async function removeExpiredJobs(db: Queryable, retentionDays: number, batchSize = 1_000): Promise<number> {
  let removed = 0;
  for (;;) {
    const { rowCount } = await db.query(
      `DELETE FROM jobs WHERE id IN (
         SELECT j.id FROM jobs j
         WHERE j.terminal_at < now() - make_interval(days => $1)
           AND NOT EXISTS (SELECT 1 FROM effects e WHERE e.job_id = j.id AND e.status IN ('pending', 'needs_review'))
         LIMIT $2)`,
      [retentionDays, batchSize],
    );
    removed += rowCount ?? 0;
    if (!rowCount || rowCount < batchSize) return removed;
  }
}

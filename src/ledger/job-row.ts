import { prepared } from '../db/prepared';
import type { Queryable } from './queryable';

/**
 * Locks a job row for the rest of the caller's transaction, reading nothing
 * from it. Every transition of a job and its attempts and effects takes the
 * job row first, then the child row, so two of them never deadlock (see
 * lockJobRow, which also reads the row).
 */
export async function holdJobRow(tx: Queryable, jobId: string): Promise<void> {
  await tx.query(prepared('SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE', [jobId]));
}

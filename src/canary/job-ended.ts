import type { Queryable } from '../ledger/queryable';
import { countJobEnded, type JobEnded } from '../metrics/job-outcomes';
import type { Metrics } from '../metrics/metrics';
import { isBaselineVersion } from '../providers/route-version';
import { checkCanary } from './check';
import { prepared } from '../db/prepared';

function warnUnchecked(jobId: string) {
  return (err: unknown) => process.emitWarning(`could not count the outcome of job ${jobId}, or check its route version: ${(err as Error).message}`);
}

/**
 * What follows a job's terminal write, by the one caller that committed it:
 * its outcome is counted (from `known`, when the terminal write returned it), and the route version that served it is checked
 * against its canary thresholds (a canary whose last jobs cross one stops by
 * itself). Never throws: the job's own work is done and is not failed for it.
 */
export async function afterJobEnded(db: Queryable, metrics: Metrics, jobId: string, onError: (err: unknown) => void = warnUnchecked(jobId), known?: JobEnded): Promise<void> {
  const served = await countJobEnded(db, metrics, jobId, onError, known);
  // A baseline is never a canary: no read at all for the jobs of the providers file's route.
  if (!served?.routeVersion || isBaselineVersion(served.routeVersion)) return;
  try {
    await checkCanary(db, served.operation, served.routeVersion);
  } catch (err) {
    onError(err);
  }
}

/**
 * What follows a job's entering a wait only an operator may end (an attempt
 * became unknown; an effect went to needs_review), by the caller that wrote
 * it: the route version that serves it is checked against its canary
 * thresholds, which count such jobs (route-versions.ts, windowCounts), so a
 * canary whose primary black-holes requests stops at its threshold, not at
 * its expiry. Never throws.
 */
export async function afterJobBlocked(db: Queryable, jobId: string, onError: (err: unknown) => void = warnUnchecked(jobId)): Promise<void> {
  try {
    const { rows } = await db.query<{ operation: string; route_version: string | null }>(prepared('SELECT operation, route_version FROM jobs WHERE id = $1', [jobId]));
    const served = rows[0];
    if (!served?.route_version || isBaselineVersion(served.route_version)) return;
    await checkCanary(db, served.operation, served.route_version);
  } catch (err) {
    onError(err);
  }
}

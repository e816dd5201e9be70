import type { Queryable } from '../ledger/queryable';
import { readJobEnded, type JobEnded } from '../ledger/job-ended';
import type { Metrics } from './metrics';

/**
 * The outcomes a job is counted under: admitted once, when its intent is
 * admitted; then one terminal status and each harm it had, once, when it
 * becomes terminal. These are the fixed denominators success and harm rates
 * are computed from, by operation and route version.
 */
export const JobOutcome = {
  admitted: 'admitted',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
  withUnknowns: 'with_unknowns',
  withContractViolations: 'with_contract_violations',
  withEffectsInReview: 'with_effects_in_review',
} as const;
export type JobOutcome = (typeof JobOutcome)[keyof typeof JobOutcome];

/** The label of a job admitted before route versions were recorded. */
export const UNRECORDED_ROUTE = 'unrecorded';

function warnUncounted(jobId: string) {
  return (err: unknown) => process.emitWarning(`could not count the outcome of job ${jobId}: ${(err as Error).message}`);
}

/** Counts a job admitted to `routeVersion`. */
export function countJobAdmitted(metrics: Metrics, operation: string, routeVersion: string | null | undefined): void {
  metrics.jobOutcomes.inc({ operation, route: routeVersion ?? UNRECORDED_ROUTE, outcome: JobOutcome.admitted });
}

export type { JobEnded } from '../ledger/job-ended';

/**
 * Counts the outcome of a job whose terminal write the caller has just
 * committed (and only such a caller, so each job is counted once): its
 * status and the harms it had on the way, read from the ledger, or as the
 * terminal write returned them (`known`).
 * Never throws: a count that cannot be read is reported to `onError` (by
 * default a process warning), and the job's own work is not failed for it.
 * @returns the job's operation and route version, or undefined when it was not counted.
 */
export async function countJobEnded(
  db: Queryable,
  metrics: Metrics,
  jobId: string,
  onError: (err: unknown) => void = warnUncounted(jobId),
  known?: JobEnded,
): Promise<{ operation: string; routeVersion: string | null } | undefined> {
  try {
    const ended = known ?? (await readJobEnded(db, jobId));
    if (!ended) return undefined;
    const labels = { operation: ended.operation, route: ended.routeVersion ?? UNRECORDED_ROUTE };
    metrics.jobOutcomes.inc({ ...labels, outcome: ended.status as JobOutcome });
    if (ended.withUnknowns) metrics.jobOutcomes.inc({ ...labels, outcome: JobOutcome.withUnknowns });
    if (ended.withContractViolations) metrics.jobOutcomes.inc({ ...labels, outcome: JobOutcome.withContractViolations });
    if (ended.withEffectsInReview) metrics.jobOutcomes.inc({ ...labels, outcome: JobOutcome.withEffectsInReview });
    return { operation: ended.operation, routeVersion: ended.routeVersion };
  } catch (err) {
    onError(err);
    return undefined;
  }
}

import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { loadJobDetailsById, loadJobDetailsByScope, newJobDetails, type JobDetails } from '../ledger/job-details';
import { admitJob, IdempotencyKeyReusedError, reopenFailedJob, type JobRecord } from '../ledger/jobs';
import { startOrAttachJobWorkflow, type WorkflowTarget } from '../temporal/starter';
import { requestDigest } from '../jobs/digest';
import { jobRunWorkflowId, jobWorkflowId, type JobScope } from '../jobs/scope';
import { isTerminal, JobStatus } from '../jobs/status';
import type { BillingPolicy } from '../operations/define';

export interface Intent extends JobScope {
  schemaVersion: number;
  input: Record<string, unknown>;
  /** The operation's billing policy when the intent arrives: the job is billed by it. */
  billing?: BillingPolicy;
  /**
   * The version of the route that will serve a new job, or how to choose it
   * from the new job's id (a canary's share); recorded with it, never changed by a retry.
   */
  routeVersion?: string | ((jobId: string) => Promise<string>);
  /** The caller's deadline for a new job (or a new run); a retry never changes the stored one. */
  deadlineAt?: Date;
  /** The operation's `reopenFailed`: the same intent after a failed job with no effect claimed starts its next run. */
  reopenFailed?: boolean;
}

export interface Admission {
  details: JobDetails;
  created: boolean;
  /** This call started a new run of a failed job (reopenFailed): new work was accepted, as for a new job. */
  reopened: boolean;
  /** The route version a job created (or reopened) by this call was admitted to. */
  routeVersion?: string;
}

/** The workflow could not be started or attached; the job row is kept and a retry repairs it. */
export class WorkflowStartError extends Error {
  override name = 'WorkflowStartError';
  constructor(readonly job: JobRecord, options: { cause: unknown }) {
    super('the job was recorded but its workflow could not be started; retry with the same key', options);
  }
}

/**
 * Turns an intent into its one job. A retry is answered by one read; a new
 * intent is inserted, and the unique constraint on the scope decides who
 * created it (invariant 1); another digest is a conflict (invariant 2). A job
 * that is not terminal gets its workflow started or attached (which repairs a
 * job whose workflow never started); a terminal one is answered from Postgres
 * alone (invariant 9) — unless its operation declares `reopenFailed` and the
 * job failed with no effect ever claimed: then this intent starts the job's
 * next run (one compare-and-swap decides which of several retries does),
 * under a workflow of its own. A deadline already past reopens nothing.
 * @throws IdempotencyKeyReusedError on another digest.
 * @throws WorkflowStartError when Temporal cannot be reached.
 * @throws whatever `beforeNewJob` throws, before anything is written (it runs before a reopen too: a new run is new work).
 */
export async function admit(db: Pool, workflows: WorkflowTarget, intent: Intent, opts: { beforeNewJob?: () => Promise<void> } = {}): Promise<Admission> {
  const digest = requestDigest(intent.operation, intent.schemaVersion, intent.input);
  let details = await loadJobDetailsByScope(db, intent);
  let created = false;
  // Only a new intent is checked (budgets): a replay of an existing key is always answered.
  if (!details) await opts.beforeNewJob?.();
  let routeVersion: string | undefined;
  while (!details) {
    // The id is chosen here, so a canary's share can be decided by it before the insert; the
    // unique constraint on the scope still decides whether this insert creates the job.
    const id = randomUUID();
    routeVersion = typeof intent.routeVersion === 'function' ? await intent.routeVersion(id) : intent.routeVersion;
    const admitted = await admitJob(db, { ...intent, id, routeVersion, requestDigest: digest, workflowId: jobWorkflowId(intent) });
    created = admitted.created;
    // A new job's history is its created event, written with it; a found one is read
    // (undefined only if retention removed the row in between: admit again).
    details = created ? newJobDetails(admitted.job) : await loadJobDetailsById(db, admitted.job.id);
  }
  if (details.job.requestDigest !== digest) throw new IdempotencyKeyReusedError(details.job);
  let reopened = false;
  if (intent.reopenFailed && details.job.status === JobStatus.failed && (!intent.deadlineAt || intent.deadlineAt.getTime() > Date.now())) {
    await opts.beforeNewJob?.();
    const failed = details.job;
    const reopening = await reopenFailedJob(db, { jobId: failed.id, requestDigest: digest, failedRun: failed.run, workflowId: jobRunWorkflowId(intent, failed.run + 1), deadlineAt: intent.deadlineAt ?? null });
    reopened = reopening !== undefined;
    if (reopening) routeVersion = reopening.routeVersion ?? undefined;
    // Reopened here or by a concurrent retry, or refused (an effect was claimed): the job as it now is.
    details = (await loadJobDetailsById(db, failed.id)) ?? details;
  }
  if (!isTerminal(details.job.status)) {
    try {
      await startOrAttachJobWorkflow(workflows, details.job);
    } catch (err) {
      throw new WorkflowStartError(details.job, { cause: err });
    }
  }
  return { details, created, reopened, ...((created || reopened) && routeVersion !== undefined ? { routeVersion } : {}) };
}

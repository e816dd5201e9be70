import type { Pool } from 'pg';
import { admitJob, type JobRecord } from '../ledger/jobs';
import { startOrAttachJobWorkflow, type WorkflowTarget } from '../temporal/starter';
import { requestDigest } from './digest';
import { jobWorkflowId, type JobScope } from './scope';
import { isTerminal } from './status';

export interface Intent extends JobScope {
  schemaVersion: number;
  input: Record<string, unknown>;
}

export interface Admission {
  job: JobRecord;
  created: boolean;
}

/** The workflow could not be started or attached; the job row is kept and a retry repairs it. */
export class WorkflowStartError extends Error {
  override name = 'WorkflowStartError';
  constructor(readonly job: JobRecord, options: { cause: unknown }) {
    super('the job was recorded but its workflow could not be started; retry with the same key', options);
  }
}

/**
 * Turns an intent into its one job: insert-or-find by scope (the database
 * decides), digest check, then start-or-attach the workflow unless the job is
 * already terminal (a terminal job is answered from Postgres alone).
 * @throws IdempotencyKeyReusedError (from the ledger) on another digest.
 * @throws WorkflowStartError when Temporal cannot be reached.
 */
export async function admit(db: Pool, workflows: WorkflowTarget, intent: Intent): Promise<Admission> {
  const digest = requestDigest(intent.operation, intent.schemaVersion, intent.input);
  const { job, created } = await admitJob(db, {
    ...intent,
    requestDigest: digest,
    workflowId: jobWorkflowId(intent),
  });
  if (!isTerminal(job.status)) {
    try {
      await startOrAttachJobWorkflow(workflows, job);
    } catch (err) {
      throw new WorkflowStartError(job, { cause: err });
    }
  }
  return { job, created };
}

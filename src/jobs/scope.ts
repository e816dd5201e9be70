import { createHash } from 'node:crypto';

/** The scope of an idempotency key: one job per scope (invariant 1). */
export interface JobScope {
  principalId: string;
  operation: string;
  idempotencyKey: string;
}

/**
 * The job's workflow ID, derived from its scope alone, so a retry that finds the
 * row can start-or-attach the same workflow. Hashed: neither the principal nor
 * the client's key shows in Temporal.
 */
export function jobWorkflowId(scope: JobScope): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([scope.principalId, scope.operation, scope.idempotencyKey]))
    .digest('base64url');
  return `job-${scope.operation}-${digest}`;
}

/**
 * The workflow ID of one run of the job: the scope's for the first run, with
 * `-run-N` for a reopened job's run N. A new run gets a workflow of its own,
 * so no request can attach it to the previous run's workflow, which may not
 * have completed yet when the failure is announced.
 */
export function jobRunWorkflowId(scope: JobScope, run: number): string {
  return run === 1 ? jobWorkflowId(scope) : `${jobWorkflowId(scope)}-run-${run}`;
}

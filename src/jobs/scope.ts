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

/** The length of jobWorkflowId's digest: SHA-256 in base64url, unpadded. */
const DIGEST_CHARS = 43;

/**
 * The operation a job's first-run workflow ID names (jobWorkflowId), or
 * undefined for any other ID. A hint only, for a read that runs before the
 * job's row is read: what the row says is what counts.
 */
export function operationOfWorkflowId(workflowId: string): string | undefined {
  const operationEnds = workflowId.length - DIGEST_CHARS - 1;
  if (!workflowId.startsWith('job-') || operationEnds <= 4 || workflowId[operationEnds] !== '-') return undefined;
  return workflowId.slice(4, operationEnds);
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

import type { Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import type { JobRecord } from '../ledger/jobs';
import { JOB_WORKFLOW, searchAttributes, type JobWorkflowInput } from './contract';

export interface WorkflowTarget {
  client: Client;
  taskQueue: string;
  /** False on a server without Onceflow's search attributes registered. */
  searchAttributes: boolean;
}

/**
 * Starts the job's workflow, or attaches to the one already running under its
 * derived ID (USE_EXISTING). Calling it for a job whose workflow never started
 * repairs that job.
 */
export async function startOrAttachJobWorkflow(target: WorkflowTarget, job: JobRecord): Promise<void> {
  const input: JobWorkflowInput = { jobId: job.id, searchAttributes: target.searchAttributes };
  await target.client.workflow.start(JOB_WORKFLOW, {
    taskQueue: target.taskQueue,
    workflowId: job.workflowId,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: target.searchAttributes
      ? new TypedSearchAttributes([
          { key: searchAttributes.principal, value: job.principalId },
          { key: searchAttributes.operation, value: job.operation },
          { key: searchAttributes.status, value: job.status },
        ])
      : undefined,
  });
}

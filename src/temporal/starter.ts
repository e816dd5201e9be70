import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { JOB_WORKFLOW, JOB_WORKFLOW_REVISION, searchAttributes, type JobWorkflowInput } from './contract';

export interface WorkflowTarget {
  client: Client;
  taskQueue: string;
  /** False on a server without Onceflow's search attributes registered. */
  searchAttributes: boolean;
  /** The workflow task timeout new job workflows get (Temporal's default, 10 s, when absent). */
  workflowTaskTimeoutMs?: number;
}

/** What starting a job's workflow needs to know of the job. */
export interface JobToStart {
  id: string;
  principalId: string;
  operation: string;
  status: string;
  workflowId: string;
}

/**
 * Starts the job's workflow, or attaches to the one already running under its
 * derived ID (USE_EXISTING). Calling it for a job whose workflow never started,
 * or whose workflow ended before the job did, starts a new run that drives it.
 */
export async function startOrAttachJobWorkflow(target: WorkflowTarget, job: JobToStart): Promise<void> {
  // The status search attribute is written only when the job waits for a person (and when such a job ends).
  const input: JobWorkflowInput = { jobId: job.id, searchAttributes: target.searchAttributes, revision: JOB_WORKFLOW_REVISION };
  await target.client.workflow.start(JOB_WORKFLOW, {
    taskQueue: target.taskQueue,
    workflowId: job.workflowId,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    ...(target.workflowTaskTimeoutMs ? { workflowTaskTimeout: target.workflowTaskTimeoutMs } : {}),
    typedSearchAttributes: target.searchAttributes
      ? new TypedSearchAttributes([
          { key: searchAttributes.principal, value: job.principalId },
          { key: searchAttributes.operation, value: job.operation },
        ])
      : undefined,
  });
}

/**
 * Starts the workflow of an open job when none is running (invariant 11).
 * @returns true when a workflow had to be started.
 */
export async function repairJobWorkflow(target: WorkflowTarget, job: JobToStart): Promise<boolean> {
  try {
    const described = await target.client.workflow.getHandle(job.workflowId).describe();
    if (described.status.name === 'RUNNING') return false;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  await startOrAttachJobWorkflow(target, job);
  return true;
}

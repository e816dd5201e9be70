/** What Temporal says of a job's workflow, read with @temporalio/client's describe. */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';

/** RUNNING, COMPLETED, FAILED, TERMINATED, ...; NOT_FOUND; UNREACHABLE when Temporal did not answer. */
export async function workflowStatus(client: Client, workflowId: string): Promise<string> {
  try {
    const description = await client.workflow.getHandle(workflowId).describe();
    return description.status.name;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'NOT_FOUND';
    return 'UNREACHABLE';
  }
}

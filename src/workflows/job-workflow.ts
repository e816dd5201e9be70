import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { searchAttributes, type JobWorkflowInput } from '../temporal/contract';

const ledger = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  // Ledger writes are idempotent by their WHERE clauses, so retrying them is safe.
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds', backoffCoefficient: 2 },
});

/**
 * One workflow per job. It holds no job state of its own: every decision is a
 * ledger write whose WHERE clause is the rule, so replays and restarts are safe.
 */
export async function jobWorkflow(input: JobWorkflowInput): Promise<string> {
  const setStatus = (status: string): void => {
    if (input.searchAttributes !== false) upsertSearchAttributes([{ key: searchAttributes.status, value: status }]);
  };
  const begun = await ledger.beginJob(input.jobId);
  setStatus(begun.status);
  if (begun.terminal) return begun.status;

  const finished = await ledger.runPlaceholderStep(input.jobId);
  setStatus(finished);
  return finished;
}

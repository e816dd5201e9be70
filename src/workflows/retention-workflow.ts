import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { removeExpiredJobs } = proxyActivities<Activities>({ startToCloseTimeout: '10 minutes', retry: { maximumInterval: '1 minute' } });

/** Run by the retention Schedule: removes terminal jobs past the retention. */
export async function retentionWorkflow(input: { retentionDays: number }): Promise<number> {
  return removeExpiredJobs(input.retentionDays);
}

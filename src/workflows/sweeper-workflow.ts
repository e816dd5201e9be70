import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { sweepJobs } = proxyActivities<Activities>({ startToCloseTimeout: '5 minutes', retry: { maximumInterval: '1 minute' } });

/**
 * Run by the sweeper Schedule: starts the workflow of every open job that has
 * none running (invariant 11), and looks up attempts left unknown in ended jobs.
 */
export async function sweeperWorkflow(): Promise<{ looked: number; repaired: number; leftovers?: number }> {
  return sweepJobs();
}

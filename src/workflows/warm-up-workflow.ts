import { proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { warmUp } = proxyLocalActivities<Pick<Activities, 'warmUp'>>({ startToCloseTimeout: '30 seconds', retry: { maximumAttempts: 1 } });

/**
 * Started by a worker as it starts (one per worker process): its first
 * workflow task and local activity pay the one-time costs that the first job
 * would otherwise pay. It touches no job.
 */
export async function warmUpWorkflow(): Promise<void> {
  await warmUp();
}

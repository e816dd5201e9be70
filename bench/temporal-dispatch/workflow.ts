import { proxyLocalActivities } from '@temporalio/workflow';
const { mark } = proxyLocalActivities<{ mark(): Promise<void> }>({ startToCloseTimeout: '10s' });
/** One local activity, nothing else: the smallest workflow a job could be. */
export async function dispatch(): Promise<void> {
  await mark();
}

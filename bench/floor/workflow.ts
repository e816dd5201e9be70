import { proxyLocalActivities } from '@temporalio/workflow';
import type { FloorActivities } from './activities';

const { draftAndSend } = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '30s', retry: { maximumAttempts: 1 } });

/** The job with nothing of Onceflow's around it: one workflow task, one local activity. */
export async function floorJob(input: { ticketId: string; customerMessage: string; channel: string }): Promise<string> {
  return draftAndSend(input);
}

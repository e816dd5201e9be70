import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { RETENTION_SCHEDULE_ID, RETENTION_WORKFLOW } from './contract';

/**
 * Creates the Temporal Schedule that removes expired jobs every hour, or
 * brings an existing one up to date with the configured retention.
 */
export async function ensureRetentionSchedule(client: Client, opts: { taskQueue: string; retentionDays: number; scheduleId?: string }): Promise<void> {
  const scheduleId = opts.scheduleId ?? RETENTION_SCHEDULE_ID;
  const action = {
    type: 'startWorkflow' as const,
    workflowType: RETENTION_WORKFLOW,
    taskQueue: opts.taskQueue,
    args: [{ retentionDays: opts.retentionDays }],
  };
  try {
    await client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: '1 hour' }] },
      action,
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, action: { ...previous.action, ...action } }));
  }
}

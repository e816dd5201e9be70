import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import { RETENTION_SCHEDULE_ID, RETENTION_WORKFLOW, SWEEPER_SCHEDULE_ID, SWEEPER_WORKFLOW } from './contract';

interface ScheduledWorkflow {
  scheduleId: string;
  every: Duration;
  workflowType: string;
  taskQueue: string;
  args: unknown[];
}

/**
 * Creates a Temporal Schedule that starts a workflow at a fixed interval
 * (skipping a start while the previous one still runs), or brings an
 * existing one up to date with the configuration.
 */
async function ensureSchedule(client: Client, scheduled: ScheduledWorkflow): Promise<void> {
  const action = { type: 'startWorkflow' as const, workflowType: scheduled.workflowType, taskQueue: scheduled.taskQueue, args: scheduled.args };
  const spec = { intervals: [{ every: scheduled.every }] };
  try {
    await client.schedule.create({ scheduleId: scheduled.scheduleId, spec, action, policies: { overlap: ScheduleOverlapPolicy.SKIP } });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(scheduled.scheduleId).update((previous) => ({ ...previous, spec, action: { ...previous.action, ...action } }));
  }
}

/** The hourly Schedule that removes terminal jobs past the retention. */
export async function ensureRetentionSchedule(client: Client, opts: { taskQueue: string; retentionDays: number; scheduleId?: string }): Promise<void> {
  await ensureSchedule(client, {
    scheduleId: opts.scheduleId ?? RETENTION_SCHEDULE_ID,
    every: '1 hour',
    workflowType: RETENTION_WORKFLOW,
    taskQueue: opts.taskQueue,
    args: [{ retentionDays: opts.retentionDays }],
  });
}

/** The Schedule that, every minute, starts the workflow of any open job that has none running (invariant 11). */
export async function ensureSweeperSchedule(client: Client, opts: { taskQueue: string; scheduleId?: string }): Promise<void> {
  await ensureSchedule(client, { scheduleId: opts.scheduleId ?? SWEEPER_SCHEDULE_ID, every: '1 minute', workflowType: SWEEPER_WORKFLOW, taskQueue: opts.taskQueue, args: [] });
}

import { randomUUID } from 'node:crypto';
import { ensureRetentionSchedule } from '../../src/temporal/schedules';
import { isTerminalJob, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';

describe('retention', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.close());

  const age = (jobId: string, days: number) => stack.db.pool.query(`UPDATE jobs SET terminal_at = now() - make_interval(days => $2) WHERE id = $1`, [jobId, days]);
  const exists = async (jobId: string) => (await stack.db.pool.query('SELECT 1 FROM jobs WHERE id = $1', [jobId])).rowCount === 1;

  it('removes terminal jobs past the retention on a Temporal Schedule; the key then starts a new intent', async () => {
    // Arrange: one job past the 30-day retention, one within it, one old but with an effect still pending.
    const oldKey = randomUUID();
    const old = (await submitReply(stack, { key: oldKey, message: 'old', wait: 20 })).json();
    const recent = (await submitReply(stack, { message: 'recent', wait: 20 })).json();
    const stuck = (await submitReply(stack, { message: 'stuck', wait: 20 })).json();
    await waitForJob(stack, stuck.id, isTerminalJob);
    await age(old.id, 31);
    await age(recent.id, 29);
    await age(stuck.id, 45);
    await stack.db.pool.query(`UPDATE effects SET status = 'pending', settled_at = NULL, lease_owner = 'lost', lease_expires_at = now() WHERE job_id = $1`, [stuck.id]);
    const scheduleId = `retention-${randomUUID()}`;

    // Act
    await ensureRetentionSchedule(stack.temporal.client, { taskQueue: stack.temporal.taskQueue, retentionDays: 30, scheduleId });
    const schedule = stack.temporal.client.schedule.getHandle(scheduleId);
    await schedule.trigger();
    for (let i = 0; i < 200 && (await exists(old.id)); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    const again = await submitReply(stack, { key: oldKey, message: 'old' });

    // Assert
    expect((await schedule.describe()).spec.intervals).toEqual([expect.objectContaining({ every: 3_600_000 })]);
    expect(await exists(old.id)).toBe(false);
    expect((await stack.db.pool.query('SELECT count(*) FROM job_events WHERE job_id = $1', [old.id])).rows[0].count).toBe('0');
    expect(await exists(recent.id)).toBe(true);
    expect(await exists(stuck.id)).toBe(true);
    expect(again.statusCode).toBe(202);
    expect(again.json().id).not.toBe(old.id);
    await schedule.delete();
  });

  it('updates the schedule to a new retention instead of failing when it exists', async () => {
    const scheduleId = `retention-${randomUUID()}`;
    await ensureRetentionSchedule(stack.temporal.client, { taskQueue: stack.temporal.taskQueue, retentionDays: 30, scheduleId });
    await ensureRetentionSchedule(stack.temporal.client, { taskQueue: stack.temporal.taskQueue, retentionDays: 7, scheduleId });
    const described = await stack.temporal.client.schedule.getHandle(scheduleId).describe();
    expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: 'retentionWorkflow' });
    expect((described.action as { args?: unknown[] }).args).toEqual([{ retentionDays: 7 }]);
    await stack.temporal.client.schedule.getHandle(scheduleId).delete();
  });

});

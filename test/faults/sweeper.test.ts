import { randomUUID } from 'node:crypto';
import { requestDigest } from '../../src/jobs/digest';
import { jobWorkflowId } from '../../src/jobs/scope';
import { admitJob } from '../../src/ledger/jobs';
import { ensureSweeperSchedule } from '../../src/temporal/schedules';
import { startOrAttachJobWorkflow } from '../../src/temporal/starter';
import { isTerminalJob, startTestStack, waitForJob, type TestStack } from '../harness/stack';

/** Invariant 11, the repair half: no open job is left without a workflow that moves it. */
describe('the sweeper', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.close());

  /** A job as the API writes it, whose workflow was never started (the API died between the insert and the start). */
  async function orphanJob(ageMs: number): Promise<{ id: string; workflowId: string }> {
    const scope = { principalId: 'alice', operation: 'support.reply', idempotencyKey: randomUUID() };
    const input = { ticketId: `T-${randomUUID().slice(0, 8)}`, customerMessage: 'Is anyone there?', channel: 'email' };
    const { job } = await admitJob(stack.db.pool, { ...scope, input, schemaVersion: 1, requestDigest: requestDigest(scope.operation, 1, input), workflowId: jobWorkflowId(scope) });
    await stack.db.pool.query(`UPDATE jobs SET created_at = now() - $2 * interval '1 millisecond' WHERE id = $1`, [job.id, ageMs]);
    return job;
  }

  it('starts the workflow of an open job older than a minute that never got one, and the job completes', async () => {
    // Arrange
    const job = await orphanJob(2 * 60_000);

    // Act
    const swept = await stack.activities.sweepJobs();
    const done = await waitForJob(stack, job.id, isTerminalJob);

    // Assert
    expect(swept.repaired).toBeGreaterThanOrEqual(1);
    expect(done.status).toBe('succeeded');
    expect(done.events.map((e: { type: string }) => e.type)).toContain('job.workflow_repaired');
  });

  it('starts a new run for an open job whose workflow ended before it', async () => {
    // Arrange: the job's workflow is terminated while the job is open (a workflow ended by hand, or by an old bug).
    await stack.stopWorker();
    const job = await orphanJob(2 * 60_000);
    await startOrAttachJobWorkflow(stack.workflows, { ...job, principalId: 'alice', operation: 'support.reply', status: 'accepted' });
    await stack.temporal.client.workflow.getHandle(job.workflowId).terminate('ended by hand');
    await stack.startWorker();

    // Act
    const swept = await stack.activities.sweepJobs();
    const done = await waitForJob(stack, job.id, isTerminalJob);

    // Assert
    expect(swept.repaired).toBeGreaterThanOrEqual(1);
    expect(done.status).toBe('succeeded');
  });

  it('leaves alone a job whose workflow is running, a job younger than a minute, and a job it looked at lately', async () => {
    // Arrange: an old job whose workflow runs (waiting for a worker), and a fresh job with none yet.
    await stack.stopWorker();
    const running = await orphanJob(2 * 60_000);
    await startOrAttachJobWorkflow(stack.workflows, { ...running, principalId: 'alice', operation: 'support.reply', status: 'accepted' });
    const fresh = await orphanJob(0);

    // Act
    const first = await stack.activities.sweepJobs();
    const second = await stack.activities.sweepJobs();

    // Assert
    expect(first).toMatchObject({ looked: 1, repaired: 0 });
    expect(second).toMatchObject({ looked: 0, repaired: 0 });
    expect(await stack.temporal.client.workflow.getHandle(fresh.workflowId).describe().catch((err: Error) => err.name)).toBe('WorkflowNotFoundError');
    await stack.startWorker();
    await waitForJob(stack, running.id, isTerminalJob);
  });

  it('runs every minute on a Temporal Schedule', async () => {
    // Arrange
    const job = await orphanJob(2 * 60_000);
    const scheduleId = `sweeper-${randomUUID()}`;

    // Act
    await ensureSweeperSchedule(stack.temporal.client, { taskQueue: stack.temporal.taskQueue, scheduleId });
    const schedule = stack.temporal.client.schedule.getHandle(scheduleId);
    await schedule.trigger();
    const done = await waitForJob(stack, job.id, isTerminalJob);

    // Assert
    expect((await schedule.describe()).spec.intervals).toEqual([expect.objectContaining({ every: 60_000 })]);
    expect(done.status).toBe('succeeded');
    await schedule.delete();
  });
});

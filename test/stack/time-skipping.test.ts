import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import { requestDigest } from '../../src/jobs/digest';
import { jobWorkflowId } from '../../src/jobs/scope';
import { admitJob, getJob } from '../../src/ledger/jobs';
import { createMetrics } from '../../src/metrics/metrics';
import { JOB_WORKFLOW } from '../../src/temporal/contract';
import { createTestDatabase, type TestDatabase } from '../harness/database';
import { createTimeSkippingEnv, workflowBundle } from '../harness/temporal';

describe('the stack on the time-skipping test server', () => {
  let env: TestWorkflowEnvironment;
  let db: TestDatabase;
  beforeAll(async () => {
    [env, db] = await Promise.all([createTimeSkippingEnv(), createTestDatabase()]);
  });
  afterAll(async () => {
    await env?.teardown();
    await db?.drop();
  });

  it('runs the job workflow against the real ledger', async () => {
    // Arrange
    const scope = { principalId: 'alice', operation: 'support.reply', idempotencyKey: randomUUID() };
    const input = { ticketId: 'T-9', customerMessage: 'hi', channel: 'chat' };
    const { job } = await admitJob(db.pool, { ...scope, input, schemaVersion: 1, requestDigest: requestDigest(scope.operation, 1, input), workflowId: jobWorkflowId(scope) });
    const taskQueue = `ts-${randomUUID()}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      activities: createActivities({ db: db.pool, metrics: createMetrics() }),
      workflowBundle: workflowBundle(),
    });

    // Act
    const status = await worker.runUntil(
      env.client.workflow.execute(JOB_WORKFLOW, { taskQueue, workflowId: job.workflowId, args: [{ jobId: job.id, searchAttributes: false }] }),
    );

    // Assert
    expect(status).toBe('succeeded');
    expect((await getJob(db.pool, job.id))?.status).toBe('succeeded');
  });
});

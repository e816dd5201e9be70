import { getJob } from '../../src/ledger/jobs';
import { startTimeSkippingStack, type TimeSkippingStack } from '../harness/time-skipping';

describe('the stack on the time-skipping test server', () => {
  let stack: TimeSkippingStack;
  beforeAll(async () => {
    stack = await startTimeSkippingStack();
  });
  afterAll(() => stack?.close());

  it('runs the job workflow against the real ledger and simulator', async () => {
    // Arrange
    const { jobId, workflowId } = await stack.startJob('hello');

    // Act
    const status = await stack.withWorker(() => stack.env.client.workflow.getHandle(workflowId).result());

    // Assert
    expect(status).toBe('succeeded');
    expect((await getJob(stack.db.pool, jobId))?.status).toBe('succeeded');
  });
});

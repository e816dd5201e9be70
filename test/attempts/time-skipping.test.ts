import { jobChangedSignal } from '../../src/temporal/contract';
import { listAttempts, resolveAttempt } from '../../src/ledger/attempts';
import { getJob } from '../../src/ledger/jobs';
import { startTimeSkippingStack, type TimeSkippingStack } from '../harness/time-skipping';

/**
 * Invariant 4 over long waits: an unknown attempt blocks the next one for as
 * long as nothing proves what happened, however much time passes.
 */
describe('an unknown attempt, over hours of skipped time', () => {
  let stack: TimeSkippingStack;
  beforeAll(async () => {
    stack = await startTimeSkippingStack();
  });
  afterAll(() => stack?.close());

  async function waitUntil(check: () => Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 400; i++) {
      if (await check()) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  it('stays unknown with no second attempt until an operator resolves it; then the job fails over', async () => {
    await stack.withWorker(async () => {
      // Arrange: the primary records the request and never answers.
      const { jobId, workflowId } = await stack.startJob('Hi @sim(sim-primary:hang)');
      await waitUntil(async () => (await listAttempts(stack.db.pool, jobId))[0]?.status === 'unknown', 'the attempt to become unknown');

      // Act 1: six hours pass (36 reconcile intervals).
      await stack.env.sleep('6 hours');

      // Assert 1
      const attempts = await listAttempts(stack.db.pool, jobId);
      expect(attempts).toHaveLength(1);
      expect(attempts[0]).toMatchObject({ status: 'unknown', errorClass: 'timeout', provider: 'sim-primary' });
      expect((await getJob(stack.db.pool, jobId))?.status).toBe('awaiting_resolution');
      expect(stack.sims.primary.requests().filter((r) => !r.requestId.startsWith('verify-'))).toHaveLength(1);

      // Act 2: an operator resolves it out of band.
      await resolveAttempt(stack.db.pool, { jobId, attemptId: attempts[0]!.id, outcome: 'failed', reason: 'provider confirmed it dropped the request', by: 'operator:test' });
      await stack.env.client.workflow.getHandle(workflowId).signal(jobChangedSignal);
      const status = await stack.env.client.workflow.getHandle(workflowId).result();

      // Assert 2
      expect(status).toBe('succeeded');
      const after = await listAttempts(stack.db.pool, jobId);
      expect(after.map((a) => [a.provider, a.status])).toEqual([
        ['sim-primary', 'failed'],
        ['sim-backup', 'succeeded'],
      ]);
      expect(after[0]!.resolution).toMatchObject({ outcome: 'failed', by: 'operator:test', reason: 'provider confirmed it dropped the request' });
    });
  });

  it('completes the job with a late answer found by reconciliation, without a second attempt', async () => {
    await stack.withWorker(async () => {
      // Arrange: the primary finishes 1.5 s after the request, long after the 1 s attempt timeout.
      const { jobId, workflowId } = await stack.startJob('Hi @sim(sim-primary:late=1500)');

      // Act
      const status = await stack.env.client.workflow.getHandle(workflowId).result();

      // Assert
      expect(status).toBe('succeeded');
      const attempts = await listAttempts(stack.db.pool, jobId);
      expect(attempts).toHaveLength(1);
      expect(attempts[0]).toMatchObject({ status: 'succeeded', errorClass: 'timeout', evidence: { lookup: { found: true, status: 'completed' } } });
      expect((await getJob(stack.db.pool, jobId))?.result).toMatchObject({ reply: expect.stringContaining('sim-primary') });
      expect(stack.sims.backup.requests().filter((r) => r.requestId === attempts[0]!.id)).toHaveLength(0);
    });
  });
});

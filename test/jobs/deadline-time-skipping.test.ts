import type { LookupResult, ProviderAdapter } from '../../src/providers/types';
import { listAttempts, resolveAttempt } from '../../src/ledger/attempts';
import { getJob } from '../../src/ledger/jobs';
import { createSimProviders } from '../../src/sim/providers';
import { jobChangedSignal } from '../../src/temporal/contract';
import { startTimeSkippingStack, type TimeSkippingStack } from '../harness/time-skipping';

/** The primary simulator, whose lookup says it never received a request: a dropped request, proven not executed. */
function droppingPrimary(primaryUrl: string): ProviderAdapter {
  const inner = createSimProviders({ primary: primaryUrl, backup: primaryUrl }).get('sim-primary')!;
  return { name: 'sim-dropping', kind: inner.kind, complete: (request) => inner.complete({ ...request }), lookup: async (): Promise<LookupResult> => ({ found: false }) };
}

async function waitUntil(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * The caller's deadline on Temporal's time-skipping server: the workflow's
 * waits pass in milliseconds, the deadline itself is the database's clock.
 */
describe('a caller deadline, with skipped time', () => {
  let stack: TimeSkippingStack;
  beforeAll(async () => {
    // An attempt timeout of ten minutes: only the deadline can cut these calls short.
    stack = await startTimeSkippingStack(
      { ONCEFLOW_ATTEMPT_TIMEOUT_MS: String(10 * 60_000) },
      { extraProviders: (sims) => [droppingPrimary(sims.primary.url)], route: [{ provider: 'sim-dropping', model: 'sim-small' }, { provider: 'sim-backup', model: 'sim-large' }] },
    );
  });
  afterAll(() => stack?.close());

  it('cuts the provider call at the deadline and fails the job deadline_exceeded once the lookup proves it never ran', async () => {
    await stack.withWorker(async () => {
      // Arrange: the provider never answers; the deadline is 6 s away, the attempt timeout ten minutes.
      const { jobId, workflowId } = await stack.startJob('Hi @sim(sim-primary:hang) T-ts-cut', { deadlineAt: new Date(Date.now() + 6_000) });

      // Act
      const status = await stack.env.client.workflow.getHandle(workflowId).result();

      // Assert
      expect(status).toBe('failed');
      const job = await getJob(stack.db.pool, jobId);
      expect(job?.error).toMatchObject({ type: 'deadline_exceeded' });
      const attempts = await listAttempts(stack.db.pool, jobId);
      expect(attempts.map((a) => [a.provider, a.status, a.errorClass])).toEqual([['sim-dropping', 'failed', 'not_executed']]);
      const ranMs = attempts[0]!.endedAt!.getTime() - attempts[0]!.startedAt.getTime();
      expect(ranMs).toBeLessThan(15_000);
      expect(stack.sims.backup.requests().filter((r) => r.messages.some((m) => m.content.includes('T-ts-cut')))).toHaveLength(0);
    });
  }, 60_000);
});

describe('a caller deadline passing while an attempt is unknown, with skipped time', () => {
  let stack: TimeSkippingStack;
  beforeAll(async () => {
    stack = await startTimeSkippingStack({ ONCEFLOW_ATTEMPT_TIMEOUT_MS: '2000' });
  });
  afterAll(() => stack?.close());

  it('starts nothing for days past the deadline, then fails deadline_exceeded after a not-executed resolution', async () => {
    await stack.withWorker(async () => {
      // Arrange: the primary records the request and never answers (its lookup says executing); the deadline is 6 s away.
      const deadlineAt = new Date(Date.now() + 6_000);
      const { jobId, workflowId } = await stack.startJob('Hi @sim(sim-primary:hang) T-ts-wait', { deadlineAt });
      await waitUntil(async () => (await listAttempts(stack.db.pool, jobId))[0]?.status === 'unknown', 'the attempt to become unknown');
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, deadlineAt.getTime() - Date.now()) + 500));

      // Act 1: two days pass.
      await stack.env.sleep('2 days');

      // Assert 1: invariant 4 holds past the deadline: the job waits and nothing new started.
      const attempts = await listAttempts(stack.db.pool, jobId);
      expect(attempts.map((a) => a.status)).toEqual(['unknown']);
      expect((await getJob(stack.db.pool, jobId))?.status).toBe('awaiting_resolution');
      expect(stack.sims.backup.requests().filter((r) => r.messages.some((m) => m.content.includes('T-ts-wait')))).toHaveLength(0);

      // Act 2: an operator settles it as not executed.
      await resolveAttempt(stack.db.pool, { jobId, attemptId: attempts[0]!.id, outcome: 'failed', reason: 'provider confirmed it dropped the request', by: 'operator:test' });
      await stack.env.client.workflow.getHandle(workflowId).signal(jobChangedSignal);
      const status = await stack.env.client.workflow.getHandle(workflowId).result();

      // Assert 2
      expect(status).toBe('failed');
      expect((await getJob(stack.db.pool, jobId))?.error).toMatchObject({ type: 'deadline_exceeded' });
      expect((await listAttempts(stack.db.pool, jobId)).map((a) => a.status)).toEqual(['failed']);
      expect(stack.sims.backup.requests().filter((r) => r.messages.some((m) => m.content.includes('T-ts-wait')))).toHaveLength(0);
    });
  }, 60_000);
});

import type { Client } from '@temporalio/client';
import { createOpenAiCompatibleProvider } from '../../src/providers/openai-compatible';
import { listAttempts, resolveAttempt } from '../../src/ledger/attempts';
import { getEffect, resolveEffect } from '../../src/ledger/effects';
import { getJob } from '../../src/ledger/jobs';
import { jobChangedSignal } from '../../src/temporal/contract';
import { startTimeSkippingStack, type TimeSkippingStack } from '../harness/time-skipping';

/** 5,000 by default (CI); ONCEFLOW_TEST_LONG_WAIT_PASSES lowers it while iterating locally. */
const PASSES = Number(process.env.ONCEFLOW_TEST_LONG_WAIT_PASSES ?? 5_000);
const INTERVAL_MS = 10 * 60_000;
const MAX_EVENTS_PER_RUN = 2_000;

/** Every run of a workflow, newest first, with its history's length: a continued-as-new run names the one before it. */
async function runsOf(client: Client, workflowId: string): Promise<Array<{ runId: string; events: number }>> {
  const runs: Array<{ runId: string; events: number }> = [];
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    runs.push({ runId, events: history.events?.length ?? 0 });
    runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return runs;
}

/**
 * Skips time until `looks()` reaches `target`. Time moves only while the
 * worker is idle, and a slow machine can stretch a look past its interval,
 * so it sleeps again until the count is there.
 */
async function skipUntil(stack: TimeSkippingStack, looks: () => number, target: number): Promise<void> {
  for (let round = 0; looks() < target; round++) {
    if (round >= 20) throw new Error(`only ${looks()} of ${target} looks after ${round} skips`);
    await stack.env.sleep((target - looks() + 1) * INTERVAL_MS);
  }
}

async function waitUntil(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * A job may wait for an operator without limit: each look is a few history
 * events, and a run continues as new long before Temporal's history limit.
 */
describe(`a job waiting through ${PASSES} looks`, () => {
  let stack: TimeSkippingStack;
  const looks = { reconcile: 0, review: 0 };
  beforeAll(async () => {
    // A provider with no lookup (as Anthropic's): only an operator can settle its unknown attempts.
    stack = await startTimeSkippingStack(
      { ONCEFLOW_RECONCILE_INTERVAL_MS: String(INTERVAL_MS) },
      {
        route: [
          { provider: 'sim-quiet', model: 'sim-small' },
          { provider: 'sim-backup', model: 'sim-large' },
        ],
        // It speaks to the primary simulator, which knows itself as sim-primary.
        extraProviders: (sims) => [createOpenAiCompatibleProvider({ name: 'sim-quiet', baseUrl: sims.primary.url, lookup: false })],
        wrapActivities: (activities) => ({
          ...activities,
          reconcileAttempt: (attemptId) => (looks.reconcile++, activities.reconcileAttempt(attemptId)),
          inspectEffect: (request) => (looks.review++, activities.inspectEffect(request)),
        }),
      },
    );
  }, 60_000);
  afterAll(() => stack?.close());

  it('keeps an unknown attempt waiting, every run under the history limit, until an operator resolves it', async () => {
    await stack.withWorker(async () => {
      // Arrange: the request is recorded and never answered; nothing can look it up.
      const { jobId, workflowId } = await stack.startJob('Hi @sim(sim-primary:hang)');
      await waitUntil(async () => (await listAttempts(stack.db.pool, jobId))[0]?.status === 'unknown', 'the attempt to become unknown');

      // Act 1: PASSES intervals go by.
      const before = looks.reconcile;
      await skipUntil(stack, () => looks.reconcile - before, PASSES);

      // Assert 1
      expect(looks.reconcile - before).toBeGreaterThanOrEqual(PASSES);
      expect((await getJob(stack.db.pool, jobId))?.status).toBe('awaiting_resolution');
      expect(await listAttempts(stack.db.pool, jobId)).toHaveLength(1);

      // Act 2: an operator resolves it; the job fails over and succeeds.
      const [attempt] = await listAttempts(stack.db.pool, jobId);
      await resolveAttempt(stack.db.pool, { jobId, attemptId: attempt!.id, outcome: 'failed', reason: 'the provider confirmed it was dropped', by: 'operator:test' });
      await stack.env.client.workflow.getHandle(workflowId).signal(jobChangedSignal);
      const status = await stack.env.client.workflow.getHandle(workflowId).result();

      // Assert 2
      expect(status).toBe('succeeded');
      const runs = await runsOf(stack.env.client, workflowId);
      expect(runs.length).toBeGreaterThan(1);
      for (const run of runs) expect(run.events).toBeLessThan(MAX_EVENTS_PER_RUN);
    });
  }, 1_200_000);

  it('keeps an effect in review waiting, every run under the history limit, until an operator settles it', async () => {
    await stack.withWorker(async () => {
      // Arrange: the downstream answers 500 and records nothing; it cannot be repeated safely: review.
      const { jobId, workflowId } = await stack.startJob('Please send @sink(status=500)');
      await waitUntil(async () => (await getEffect(stack.db.pool, jobId, 'message.send'))?.status === 'needs_review', 'the effect to need review');

      // Act 1
      const before = looks.review;
      await skipUntil(stack, () => looks.review - before, PASSES);

      // Assert 1
      expect(looks.review - before).toBeGreaterThanOrEqual(PASSES);
      expect((await getJob(stack.db.pool, jobId))?.status).toBe('running');

      // Act 2
      await resolveEffect(stack.db.pool, { jobId, name: 'message.send', outcome: 'succeeded', reason: 'found it in the outbox', by: 'operator:test', receipt: { messageId: 'm-found' } });
      await stack.env.client.workflow.getHandle(workflowId).signal(jobChangedSignal);
      const status = await stack.env.client.workflow.getHandle(workflowId).result();

      // Assert 2
      expect(status).toBe('succeeded');
      expect((await getJob(stack.db.pool, jobId))?.result).toMatchObject({ messageId: 'm-found' });
      const runs = await runsOf(stack.env.client, workflowId);
      expect(runs.length).toBeGreaterThan(1);
      for (const run of runs) expect(run.events).toBeLessThan(MAX_EVENTS_PER_RUN);
    });
  }, 1_200_000);
});

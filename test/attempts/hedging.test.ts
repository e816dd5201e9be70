import { randomUUID } from 'node:crypto';
import { checkRender } from '../../src/contracts/render-check';
import { createRegistry } from '../../src/operations/registry';
import { auth, isTerminalJob, KEYS, readJob, startTestStack, waitForJob, type TestStack } from '../harness/stack';

const supportReply = createRegistry().get('support.reply')!;
/** A read-only generation: the support reply's AI step with no effect, hedging after a timeout. */
const draft = { ...supportReply, name: 'support.draft', effects: undefined, finalize: undefined, retry: { hedge: { maxConcurrent: 2, budgetMs: 60_000 } } };
/** The same, with a hedging budget already spent when its first attempt times out. */
const draftNoTime = { ...draft, name: 'support.draft-late', retry: { hedge: { maxConcurrent: 2, budgetMs: 1 } } };
/** A hedging budget of 3 s, and a failed job's same intent starts a new run. */
const draftReopened = { ...draft, name: 'support.draft-again', reopenFailed: true, retry: { hedge: { maxConcurrent: 2, budgetMs: 3_000 } } };
/** Hedges only while what its attempts may have cost stays under a millionth of a dollar. */
const draftCheap = { ...draft, name: 'support.draft-cheap', retry: { hedge: { maxConcurrent: 2, budgetMs: 60_000, maxCost: '0.000001' } } };

describe('retry policies: a read-only generation hedges, a side-effecting operation never does', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      operations: createRegistry([supportReply, draft, draftNoTime, draftReopened, draftCheap]),
      env: { ONCEFLOW_ATTEMPT_TIMEOUT_MS: '1000', ONCEFLOW_RECONCILE_INTERVAL_MS: '250' },
    });
  });
  afterAll(() => stack.close());

  async function run(operation: string, message: string, until: (job: any) => boolean = isTerminalJob) {
    const submitted = await stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...auth(KEYS.alice), 'idempotency-key': randomUUID() },
      payload: { operation, input: { ticketId: `T-${randomUUID().slice(0, 8)}`, customerMessage: message, channel: 'email' } },
    });
    expect(submitted.statusCode).toBe(202);
    return waitForJob(stack, submitted.json().id, until, 20_000);
  }
  const types = (job: any): string[] => job.events.map((e: any) => e.type);

  it('hedges after a timeout while the first attempt is unknown, and keeps exactly one winner', async () => {
    // Act: the primary never answers; the backup answers at once.
    const job = await run('support.draft', 'Hi @sim(sim-primary:hang)');

    // Assert
    expect(job.status).toBe('succeeded');
    expect(job.attempts.map((a: any) => [a.provider, a.status])).toEqual([
      ['sim-primary', 'unknown'],
      ['sim-backup', 'succeeded'],
    ]);
    const hedged = job.events.find((e: any) => e.type === 'attempt.hedged');
    expect(hedged?.detail).toEqual({ attemptId: job.attempts[1].id, lane: 1, whileUnknown: [job.attempts[0].id] });
    expect(types(job).indexOf('attempt.unknown')).toBeLessThan(types(job).indexOf('attempt.hedged'));
  });

  it("records what a hedge's unknown sibling cost once its provider completes it, after the job ended: a discarded answer and an adjustment, the settlement untouched", async () => {
    // Arrange: the primary completes 2.5 s after its request; the hedge to the backup wins at about 1 s.
    const job = await run('support.draft', 'Hi @sim(sim-primary:late=2500) T-leftover', (view) => isTerminalJob(view) && view.settlement !== undefined);
    expect(job.attempts.map((a: any) => [a.provider, a.status])).toEqual([
      ['sim-primary', 'unknown'],
      ['sim-backup', 'succeeded'],
    ]);
    const settled = job.settlement;

    // Act: the sweeper looks the leftover up once its provider has completed it.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const swept = await stack.activities.sweepJobs();

    // Assert
    expect(swept.leftovers).toBeGreaterThanOrEqual(1);
    const after = await readJob(stack, job.id);
    expect(after.status).toBe('succeeded');
    expect(after.result).toEqual(job.result);
    expect(after.attempts[0]).toMatchObject({ provider: 'sim-primary', status: 'discarded', usage: { reported: true } });
    expect(after.attempts[0].usage.inputTokens).toBeGreaterThan(0);
    expect(after.settlement).toMatchObject({ providerCost: settled.providerCost, billable: settled.billable, settledAt: settled.settledAt });
    expect(after.settlement.adjustments).toEqual([expect.objectContaining({ attemptId: job.attempts[0].id })]);
  });

  it('lets the unknown attempt win when its answer comes first, though a hedge was opened after it', async () => {
    // Act: the primary completes 2.5 s after its request (found by reconciliation); the backup never answers.
    const job = await run('support.draft', 'Hi @sim(sim-primary:late=2500) @sim(sim-backup:hang)');

    // Assert
    expect(job.status).toBe('succeeded');
    expect(job.attempts.map((a: any) => [a.provider, a.status])).toEqual([
      ['sim-primary', 'succeeded'],
      ['sim-backup', 'unknown'],
    ]);
    expect(job.attempts.filter((a: any) => a.status === 'succeeded')).toHaveLength(1);
  });

  it('lets the unknown attempt win after a hedge failed (a failed sibling does not shut it out)', async () => {
    // Act: the primary completes late; the hedge to the backup is refused (400) meanwhile.
    const job = await run('support.draft', 'Hi @sim(sim-primary:late=2500) @sim(sim-backup:status=400)');

    // Assert: the first attempt's answer is the result (a lane freed by the failed hedge may have taken a third attempt meanwhile).
    expect(job.status).toBe('succeeded');
    expect(job.attempts.slice(0, 2).map((a: any) => [a.seq, a.provider, a.status])).toEqual([
      [1, 'sim-primary', 'succeeded'],
      [2, 'sim-backup', 'failed'],
    ]);
    expect(job.attempts.filter((a: any) => a.status === 'succeeded').map((a: any) => a.seq)).toEqual([1]);
  });

  it('does not hedge once its time budget is spent: it waits, as invariant 4 says', async () => {
    const job = await run('support.draft-late', 'Hi @sim(sim-primary:hang)', (view) => view.status === 'awaiting_resolution');
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const still = await readJob(stack, job.id);
    expect(still.status).toBe('awaiting_resolution');
    expect(still.attempts.map((a: any) => a.status)).toEqual(['unknown']);
    expect(types(still)).not.toContain('attempt.hedged');
  });

  it("reconciles every unknown attempt, not only the first: a hedge's answer found first wins", async () => {
    // Act: the primary completes 4 s after its request; the hedge to the backup times out too, and completes 1.5 s after its own
    const job = await run('support.draft', 'Hi @sim(sim-primary:late=4000) @sim(sim-backup:late=1500)');

    // Assert
    expect(job.status).toBe('succeeded');
    expect(job.attempts.map((a: any) => [a.provider, a.status])).toEqual([
      ['sim-primary', 'unknown'],
      ['sim-backup', 'succeeded'],
    ]);
    expect(job.attempts[1].evidence.lookup).toMatchObject({ found: true, status: 'completed' });
  });

  it("counts a reopened run's hedging budget from the run's own start, not the job's creation", async () => {
    // Arrange: the first run fails at once (its deadline leaves less than one attempt); 3.5 s later, past the budget from creation, the same intent again
    const key = randomUUID();
    const input = { ticketId: `T-${key.slice(0, 8)}`, customerMessage: 'Hi @sim(sim-primary:hang)', channel: 'email' };
    const submit = (headers: Record<string, string> = {}) =>
      stack.app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth(KEYS.alice), 'idempotency-key': key, ...headers }, payload: { operation: 'support.draft-again', input } });
    const first = await submit({ 'request-deadline': new Date(Date.now() + 500).toISOString() });
    await waitForJob(stack, first.json().id, (job) => job.status === 'failed');
    await new Promise((resolve) => setTimeout(resolve, 3_500));

    // Act
    const again = await submit();
    const job = await waitForJob(stack, again.json().id, isTerminalJob, 20_000);

    // Assert: the second run hedged to the backup while its primary was unknown
    expect(again.statusCode).toBe(202);
    expect(job.run).toBe(2);
    expect(job.status).toBe('succeeded');
    expect(job.attempts.map((a: any) => [a.provider, a.status])).toEqual([
      ['sim-primary', 'unknown'],
      ['sim-backup', 'succeeded'],
    ]);
  });

  it('counts what an unknown attempt may have cost (its prompt, and the room kept for its answer) against the hedge cost budget', async () => {
    // Act: the primary never answers; its prompt alone is over the budget
    const job = await run('support.draft-cheap', 'Hi @sim(sim-primary:hang)', (view) => view.status === 'awaiting_resolution');
    await new Promise((resolve) => setTimeout(resolve, 1_500));

    // Assert
    const still = await readJob(stack, job.id);
    expect(still.status).toBe('awaiting_resolution');
    expect(still.attempts.map((a: any) => a.status)).toEqual(['unknown']);
    expect(types(still)).not.toContain('attempt.hedged');
  });

  it("opens a hedge at a provider only once its backoff after a 429 has passed", async () => {
    // Act: the primary turns the first attempt away (Retry-After: 1); the backup's answer is lost (503, unknown): the hedge's next step is the primary
    const job = await run('support.draft', 'Hi @sim(sim-primary:status=429) @sim(sim-backup:status=503)');

    // Assert
    const [first, , third] = job.attempts;
    expect(first).toMatchObject({ provider: 'sim-primary', error: expect.objectContaining({ class: 'rate_limited' }) });
    expect(third).toMatchObject({ provider: 'sim-primary' });
    expect(Date.parse(third.startedAt) - Date.parse(first.endedAt)).toBeGreaterThanOrEqual(1000);
  });

  it('never hedges a side-effecting operation: it waits with one unknown attempt', async () => {
    const job = await run('support.reply', 'Hi @sim(sim-primary:hang)', (view) => view.status === 'awaiting_resolution');
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const still = await readJob(stack, job.id);
    expect(still.status).toBe('awaiting_resolution');
    expect(still.attempts.map((a: any) => a.status)).toEqual(['unknown']);
    expect(types(still)).not.toContain('attempt.hedged');
  });

});

describe('a hedged job that only an operator can move', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // Two attempts in all: once both lanes were used, no hedge can open.
    stack = await startTestStack({
      operations: createRegistry([supportReply, draft]),
      env: { ONCEFLOW_ATTEMPT_TIMEOUT_MS: '1000', ONCEFLOW_RECONCILE_INTERVAL_MS: '250', ONCEFLOW_MAX_ATTEMPTS: '2' },
    });
  });
  afterAll(() => stack.close());

  const submit = (message: string) =>
    stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...auth(KEYS.alice), 'idempotency-key': randomUUID() },
      payload: { operation: 'support.draft', input: { ticketId: `T-${randomUUID().slice(0, 8)}`, customerMessage: message, channel: 'email' } },
    });
  const listed = async (jobId: string): Promise<boolean> => {
    const page = await stack.app.inject({ method: 'GET', url: '/v1/jobs?status=awaiting_resolution&limit=100', headers: auth(KEYS.operator) });
    return page.json().jobs.some((job: any) => job.id === jobId);
  };

  it('awaits resolution, and is listed so, once its hedge failed and no other may open', async () => {
    // Act: the primary never answers; the hedge to the backup is refused
    const submitted = await submit('Hi @sim(sim-primary:hang) @sim(sim-backup:status=400)');
    const job = await waitForJob(stack, submitted.json().id, (view) => view.attempts.length === 2 && view.attempts[1].status === 'failed' && view.status === 'awaiting_resolution');

    // Assert: it stays so (nothing but an operator moves it), the operators' list has it, and its history says when it began to wait again
    await new Promise((resolve) => setTimeout(resolve, 750));
    const still = await readJob(stack, job.id);
    expect(still.status).toBe('awaiting_resolution');
    expect(await listed(job.id)).toBe(true);
    expect(still.events.map((e: any) => e.type).filter((type: string) => type === 'job.awaiting_resolution')).toHaveLength(2);
  });

  it('still awaits resolution after an operator resolved one of its two unknown attempts', async () => {
    // Arrange: both lanes hang
    const submitted = await submit('Hi @sim(*:hang)');
    const both = await waitForJob(stack, submitted.json().id, (view) => view.attempts.length === 2 && view.attempts.every((a: any) => a.status === 'unknown'));

    // Act
    const resolved = await stack.app.inject({ method: 'POST', url: `/v1/jobs/${both.id}/attempts/${both.attempts[1].id}/resolution`, headers: auth(KEYS.operator), payload: { outcome: 'failed', reason: 'the backup has no such request' } });

    // Assert
    expect(resolved.statusCode).toBe(200);
    const after = await readJob(stack, both.id);
    expect(after.status).toBe('awaiting_resolution');
    expect(await listed(both.id)).toBe(true);
  });
});

describe("a hedge's cost budget", () => {
  let stack: TestStack;
  const INPUT = { ticketId: 'T-cost', customerMessage: 'Hi', channel: 'email' };
  /** The most an unknown sim-small attempt of this input can cost: its prompt, and the 512 tokens sim-small keeps for the answer. */
  const mostOneCosts = (checkRender(supportReply, 'sim-small', INPUT).promptTokens! * 0.15 + 512 * 0.6) / 1e6;
  /** Hedges while its attempts have cost under a dollar (the sim price table is in USD). */
  const draftDollar = { ...draft, name: 'support.draft-dollar', retry: { hedge: { maxConcurrent: 2, budgetMs: 60_000, maxCost: '1' } } };
  /** Hedges while its attempts may have cost under one and a half unknown sim-small attempts. */
  const draftTight = { ...draft, name: 'support.draft-tight', retry: { hedge: { maxConcurrent: 2, budgetMs: 60_000, maxCost: (mostOneCosts * 1.5).toFixed(12) } } };
  beforeAll(async () => {
    // No worker: the job's next step is asked for by hand.
    stack = await startTestStack({ worker: false, operations: createRegistry([supportReply, draftDollar, draftTight]) });
  });
  afterAll(() => stack.close());

  /** A job of `operation` whose earlier attempts are as given (the last one unknown), and its next step. */
  async function nextStepWith(operation: string, earlier: Array<{ status: string; cost?: { amount: string; currency: string }; resolved?: boolean }>) {
    const submitted = await stack.app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth(KEYS.alice), 'idempotency-key': randomUUID() }, payload: { operation, input: INPUT } });
    const jobId = submitted.json().id;
    for (const [index, attempt] of earlier.entries()) {
      await stack.db.pool.query(
        `INSERT INTO attempts (id, job_id, operation, seq, provider, model, job_version, status, started_at, ended_at, usage_reported, input_tokens, output_tokens, cost, cost_currency, error_class, error_detail, resolution)
         VALUES ($1, $2, $3, $4, 'sim-primary', 'sim-small', 0, $5, now(), CASE WHEN $5 = 'unknown' THEN NULL ELSE now() END, $6, $7, $7, $8, $9, CASE WHEN $5 = 'failed' THEN 'timeout' END, CASE WHEN $5 = 'failed' THEN 'no answer' END, $10)`,
        [
          randomUUID(),
          jobId,
          operation,
          index + 1,
          attempt.status,
          attempt.cost !== undefined,
          attempt.cost ? 10 : null,
          attempt.cost?.amount ?? null,
          attempt.cost?.currency ?? null,
          attempt.resolved ? JSON.stringify({ outcome: 'failed', reason: 'presumed lost', by: 'ops', at: new Date().toISOString() }) : null,
        ],
      );
    }
    await stack.db.pool.query(`UPDATE jobs SET status = 'awaiting_resolution' WHERE id = $1`, [jobId]);
    return stack.activities.advanceJob({ jobId, attemptId: randomUUID() });
  }

  it('never adds an amount in another currency to it: such an attempt stops hedging, where the same in dollars does not', async () => {
    // Act: an attempt that cost 0.50, in euros or in dollars, then an unknown one
    const inEuros = await nextStepWith('support.draft-dollar', [{ status: 'failed', cost: { amount: '0.5', currency: 'EUR' } }, { status: 'unknown' }]);
    const inDollars = await nextStepWith('support.draft-dollar', [{ status: 'failed', cost: { amount: '0.5', currency: 'USD' } }, { status: 'unknown' }]);

    // Assert: 0.50 EUR is not "under a dollar"; 0.50 USD is
    expect(inEuros.kind).toBe('await');
    expect(inDollars.kind).toBe('call');
  });

  it('counts an attempt an operator resolved before its usage was known at the most it can cost, as an unknown one', async () => {
    // Act: one unknown attempt alone (under 1.5 of its most), and after a resolved one whose usage is not known (over)
    const alone = await nextStepWith('support.draft-tight', [{ status: 'unknown' }]);
    const afterResolved = await nextStepWith('support.draft-tight', [{ status: 'failed', resolved: true }, { status: 'unknown' }]);

    // Assert
    expect(alone.kind).toBe('call');
    expect(afterResolved.kind).toBe('await');
  });
});

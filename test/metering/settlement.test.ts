import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../src/activities';
import { loadConfig } from '../../src/config';
import { createRegistry } from '../../src/operations/registry';
import type { CompletionAnswer, ProviderAdapter } from '../../src/providers/types';
import { buildActivityDeps } from '../../src/worker/activity-deps';
import { commitAttemptResult, markAttemptRunning, markAttemptUnknown, openAttempt, resolveAttempt, type AttemptRecord } from '../../src/ledger/attempts';
import { cancelJob, failJob } from '../../src/ledger/jobs';
import { SIM_PRICES } from '../../src/providers/config';
import { auth, isTerminalJob, KEYS, readJob, runReply, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';

/** An output on the support.reply contract. */
const OUTPUT = { reply: 'We are on it.', escalate: false };

async function opened(stack: TestStack, jobId: string, provider: string, model: string): Promise<AttemptRecord> {
  const result = await openAttempt(stack.db.pool, { jobId, provider, model });
  if (result.kind !== 'opened') throw new Error(`no attempt opened: ${result.kind}`);
  return result.attempt;
}

/** The settlement rows of a job, exactly as stored. */
async function settlementsOf(stack: TestStack, jobId: string): Promise<Array<Record<string, unknown>>> {
  const { rows } = await stack.db.pool.query('SELECT * FROM settlements WHERE job_id = $1', [jobId]);
  return rows;
}

async function adjustmentsOf(stack: TestStack, jobId: string): Promise<Array<Record<string, unknown>>> {
  const { rows } = await stack.db.pool.query('SELECT attempt_id, reason, currency, provider_cost::text, billable::text, input_tokens::int, output_tokens::int FROM settlement_adjustments WHERE job_id = $1 ORDER BY id', [jobId]);
  return rows;
}

describe('settlement in the ledger (invariant 13)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // No worker: the tests drive attempts through the ledger by hand.
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

  it('bills the fallback winner only and records both costs, after a timed-out attempt was resolved', async () => {
    // Arrange: A times out and is reconciled with its usage (2000 in, 1000 out), an operator ends it; B wins.
    const job = (await submitReply(stack, { message: 'fallback winner' })).json();
    const a = await opened(stack, job.id, 'sim-primary', 'sim-small');
    await markAttemptRunning(stack.db.pool, a.id);
    await markAttemptUnknown(stack.db.pool, a.id, { class: 'timeout', detail: 'no answer in time' });
    await resolveAttempt(stack.db.pool, { jobId: job.id, attemptId: a.id, outcome: 'failed', reason: 'provider shows it ran; the answer was off contract', by: 'ops' });
    await stack.db.pool.query(`UPDATE attempts SET usage_reported = true, input_tokens = 2000, output_tokens = 1000, cost = 0.0009, cost_currency = 'USD' WHERE id = $1`, [a.id]);
    const b = await opened(stack, job.id, 'sim-backup', 'sim-large');
    await markAttemptRunning(stack.db.pool, b.id);

    // Act
    await commitAttemptResult(stack.db.pool, b.id, OUTPUT, { terminal: true, usage: { inputTokens: 1000, outputTokens: 500, price: SIM_PRICES.large } });

    // Assert: 1000 * 2.50 + 500 * 10.00 per million = 0.0075 for B; A's 0.0009 is paid, not billed.
    const view = await readJob(stack, job.id);
    expect(view.attempts.map((x: any) => [x.status, x.usage])).toEqual([
      ['failed', { reported: true, inputTokens: 2000, outputTokens: 1000, cost: '0.0009', currency: 'USD' }],
      ['succeeded', { reported: true, inputTokens: 1000, outputTokens: 500, cost: '0.0075', currency: 'USD' }],
    ]);
    expect(view.settlement).toMatchObject({ jobStatus: 'succeeded', billing: 'winner', currency: 'USD', providerCost: '0.0084', billable: '0.0075', inputTokens: 3000, outputTokens: 1500, attemptsUnpriced: 0, adjustments: [] });
    expect(view.settlement.attempts).toEqual([
      expect.objectContaining({ attemptId: a.id, cost: '0.0009', winner: false }),
      expect.objectContaining({ attemptId: b.id, cost: '0.0075', winner: true }),
    ]);
  });

  it('records a late answer after settlement as an adjustment row, and leaves the settlement untouched', async () => {
    // Arrange: A is resolved while its usage is unknown; B wins; the job is settled with A unpriced.
    const job = (await submitReply(stack, { message: 'late after settlement' })).json();
    const a = await opened(stack, job.id, 'sim-primary', 'sim-small');
    await markAttemptRunning(stack.db.pool, a.id);
    await markAttemptUnknown(stack.db.pool, a.id, { class: 'timeout', detail: 'no answer in time' });
    await resolveAttempt(stack.db.pool, { jobId: job.id, attemptId: a.id, outcome: 'failed', reason: 'gave up', by: 'ops' });
    const b = await opened(stack, job.id, 'sim-backup', 'sim-large');
    await markAttemptRunning(stack.db.pool, b.id);
    await commitAttemptResult(stack.db.pool, b.id, OUTPUT, { terminal: true, usage: { inputTokens: 1000, outputTokens: 500, price: SIM_PRICES.large } });
    const before = await settlementsOf(stack, job.id);
    expect(before).toHaveLength(1);
    expect(before[0]).toMatchObject({ provider_cost: '0.0075', billable: '0.0075', attempts_unpriced: 1 });

    // Act: A's answer arrives, then again with other numbers (a second report never rewrites the first).
    const late = await commitAttemptResult(stack.db.pool, a.id, OUTPUT, { terminal: true, usage: { inputTokens: 2000, outputTokens: 1000, price: SIM_PRICES.small } });
    await commitAttemptResult(stack.db.pool, a.id, OUTPUT, { terminal: true, usage: { inputTokens: 9999, outputTokens: 9999, price: SIM_PRICES.small } });

    // Assert
    expect(late).toBe('late');
    expect(await settlementsOf(stack, job.id)).toEqual(before);
    expect(await adjustmentsOf(stack, job.id)).toEqual([{ attempt_id: a.id, reason: 'late_usage', currency: 'USD', provider_cost: '0.0009', billable: '0', input_tokens: 2000, output_tokens: 1000 }]);
    const view = await readJob(stack, job.id);
    expect(view.settlement.adjustments).toEqual([expect.objectContaining({ attemptId: a.id, providerCost: '0.0009', billable: '0' })]);
    expect(view.attempts[0].usage).toMatchObject({ reported: true, inputTokens: 2000, outputTokens: 1000, cost: '0.0009' });
  });

  it('records the usage of an answer that breaks the contract after its attempt was resolved and its job settled', async () => {
    // Arrange: a provider whose answer (prose, off contract, 100 in and 50 out) waits for the test.
    let letAnswer!: () => void;
    const answerMay = new Promise<void>((resolve) => (letAnswer = resolve));
    let called!: () => void;
    const wasCalled = new Promise<void>((resolve) => (called = resolve));
    const slow: ProviderAdapter = {
      name: 'slow',
      kind: 'openai-compatible',
      async complete(): Promise<CompletionAnswer> {
        called();
        await answerMay;
        return { content: 'Sure! Here is prose.', raw: {}, usage: { inputTokens: 100, outputTokens: 50 } };
      },
    };
    const activities = createActivities(
      buildActivityDeps({
        db: stack.db.pool,
        metrics: stack.metrics,
        config: loadConfig({ ONCEFLOW_ATTEMPT_TIMEOUT_MS: '10000', ONCEFLOW_MESSAGES_URL: stack.sims.downstream.url }),
        operations: createRegistry(),
        providers: new Map([['slow', slow]]),
        prices: new Map([['slow', new Map([['sim-small', SIM_PRICES.small]])]]),
        routeFor: () => [],
      }),
    );
    const job = (await submitReply(stack, { message: 'zombie off contract' })).json();
    const a = await opened(stack, job.id, 'slow', 'sim-small');
    const zombie = new MockActivityEnvironment().run(activities.callProvider, a.id);
    await wasCalled;
    await markAttemptUnknown(stack.db.pool, a.id, { class: 'worker_lost', detail: 'Temporal gave up on the activity' });
    await resolveAttempt(stack.db.pool, { jobId: job.id, attemptId: a.id, outcome: 'failed', reason: 'presumed lost', by: 'ops' });
    await cancelJob(stack.db.pool, job.id, { by: 'alice' });
    const before = await settlementsOf(stack, job.id);

    // Act
    letAnswer();
    await zombie;

    // Assert: (100 * 0.15 + 50 * 0.60) / 1e6; the resolution stands.
    const view = await readJob(stack, job.id);
    expect(view.attempts[0]).toMatchObject({ status: 'failed', resolution: { by: 'ops' }, usage: { reported: true, inputTokens: 100, outputTokens: 50, cost: '0.000045' } });
    expect(await adjustmentsOf(stack, job.id)).toEqual([expect.objectContaining({ attempt_id: a.id, provider_cost: '0.000045', billable: '0' })]);
    expect(await settlementsOf(stack, job.id)).toEqual(before);
  });

  it('lets no second terminal path write another settlement: the primary key decides', async () => {
    // Arrange
    const job = (await submitReply(stack, { message: 'settled once' })).json();
    expect(await cancelJob(stack.db.pool, job.id, { by: 'alice' })).toBe('cancelled');
    const first = await settlementsOf(stack, job.id);

    // Act
    const failedToo = await failJob(stack.db.pool, job.id, { type: 'late', detail: 'a second terminal write' });
    const direct = stack.db.pool.query(`INSERT INTO settlements (job_id, principal_id, operation, job_status, billing, provider_cost, billable, input_tokens, output_tokens, attempts, attempts_unpriced, attempt_costs)
       VALUES ($1, 'alice', 'support.reply', 'failed', 'winner', 1, 1, 0, 0, 0, 0, '[]')`, [job.id]);

    // Assert
    expect(failedToo).toBe(false);
    await expect(direct).rejects.toMatchObject({ code: '23505', constraint: 'settlements_pkey' });
    expect(first).toEqual([expect.objectContaining({ job_status: 'cancelled', provider_cost: '0', billable: '0', attempts: 0 })]);
    expect(await settlementsOf(stack, job.id)).toEqual(first);
  });

  it('writes explicit zeros for an attempt cancelled before it was sent, and bills nothing for a cancelled job', async () => {
    // Arrange
    const job = (await submitReply(stack, { message: 'cancel before sending' })).json();
    const a = await opened(stack, job.id, 'sim-primary', 'sim-small');

    // Act
    await cancelJob(stack.db.pool, job.id, { by: 'alice' });

    // Assert
    const view = await readJob(stack, job.id);
    expect(view.attempts[0]).toMatchObject({ id: a.id, status: 'cancelled', usage: { reported: true, inputTokens: 0, outputTokens: 0, cost: '0' } });
    expect(view.settlement).toMatchObject({ jobStatus: 'cancelled', providerCost: '0', billable: '0', attemptsUnpriced: 0 });
  });

  it('bills every attempt under the all-attempts policy', async () => {
    // Arrange
    const job = (await submitReply(stack, { message: 'all attempts billed' })).json();
    await stack.db.pool.query(`UPDATE jobs SET billing = 'all_attempts' WHERE id = $1`, [job.id]);
    const a = await opened(stack, job.id, 'sim-primary', 'sim-small');
    await markAttemptRunning(stack.db.pool, a.id);
    await markAttemptUnknown(stack.db.pool, a.id, { class: 'timeout', detail: 'no answer in time' });
    await stack.db.pool.query(`UPDATE attempts SET usage_reported = true, input_tokens = 2000, output_tokens = 1000, cost = 0.0009, cost_currency = 'USD' WHERE id = $1`, [a.id]);
    await resolveAttempt(stack.db.pool, { jobId: job.id, attemptId: a.id, outcome: 'failed', reason: 'off contract', by: 'ops' });

    // Act
    await failJob(stack.db.pool, job.id, { type: 'attempts_exhausted', detail: 'no provider left' });

    // Assert
    expect((await readJob(stack, job.id)).settlement).toMatchObject({ jobStatus: 'failed', billing: 'all_attempts', providerCost: '0.0009', billable: '0.0009' });
  });
});

describe('metering on the real stack', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack.close());

  const run = (message: string) => runReply(stack, message, (job) => isTerminalJob(job) && job.settlement !== undefined);

  it("records the winner's usage as the provider reported it, priced exactly, and bills it", async () => {
    // Act
    const job = await run('Where is my order?');

    // Assert
    const usage = job.attempts[0].usage;
    expect(usage).toEqual({
      reported: true,
      inputTokens: expect.any(Number),
      outputTokens: expect.any(Number),
      cachedTokens: 0,
      model: 'sim-small',
      providerRequestId: expect.stringMatching(/^chatcmpl-/),
      latencyMs: expect.any(Number),
      cost: expect.stringMatching(/^0\.[0-9]+$/),
      currency: 'USD',
    });
    const { rows } = await stack.db.pool.query('SELECT ($1::bigint * 0.15 + $2::bigint * 0.60) / 1000000 = $3::numeric AS exact', [usage.inputTokens, usage.outputTokens, usage.cost]);
    expect(rows[0].exact).toBe(true);
    expect(job.settlement).toMatchObject({ jobStatus: 'succeeded', billing: 'winner', currency: 'USD', providerCost: usage.cost, billable: usage.cost, adjustments: [] });
  });

  it('bills the fallback winner only after a timed-out attempt is resolved by an operator; the unknown cost is said, not guessed', async () => {
    // Arrange: sim-primary never answers; its attempt times out (2 s) and stays unknown.
    const submitted = await submitReply(stack, { message: 'Hi @sim(sim-primary:hang)' });
    const jobId = submitted.json().id;
    const waiting = await waitForJob(stack, jobId, (job) => job.status === 'awaiting_resolution');
    const timedOut = waiting.attempts[0];

    // Act
    const resolved = await stack.app.inject({
      method: 'POST',
      url: `/v1/jobs/${jobId}/attempts/${timedOut.id}/resolution`,
      headers: auth(KEYS.operator),
      payload: { outcome: 'failed', reason: 'the provider never answered' },
    });
    const job = await waitForJob(stack, jobId, (view) => isTerminalJob(view) && view.settlement !== undefined);

    // Assert
    expect(resolved.statusCode).toBe(200);
    expect(job.attempts.map((a: any) => [a.provider, a.status])).toEqual([
      ['sim-primary', 'failed'],
      ['sim-backup', 'succeeded'],
    ]);
    const winner = job.attempts[1];
    expect(job.attempts[0].usage).toEqual({ reported: false });
    expect(winner.usage).toMatchObject({ reported: true, model: 'sim-large', cost: expect.stringMatching(/^0\.[0-9]+$/), currency: 'USD' });
    expect(job.settlement).toMatchObject({ billable: winner.usage.cost, providerCost: winner.usage.cost, attemptsUnpriced: 1 });
    expect(job.settlement.attempts.map((a: any) => [a.attemptId, a.reported, a.cost, a.winner])).toEqual([
      [timedOut.id, false, undefined, false],
      [winner.id, true, winner.usage.cost, true],
    ]);
  });

  it('writes explicit zeros for an attempt the provider refused unexecuted', async () => {
    const job = await run('Hi @sim(sim-primary:status=429)');
    expect(job.attempts[0]).toMatchObject({ status: 'failed', error: { class: 'rate_limited' }, usage: { reported: true, inputTokens: 0, outputTokens: 0, cost: '0' } });
    expect(job.settlement.providerCost).toBe(job.attempts[1].usage.cost);
  });

  it('settles twenty concurrent identical clicks once', async () => {
    // Act
    const key = `click-${randomUUID()}`;
    const responses = await Promise.all(Array.from({ length: 20 }, () => submitReply(stack, { key, message: 'Twenty clicks' })));

    // Assert
    const ids = new Set(responses.map((r) => r.json().id));
    expect(ids.size).toBe(1);
    const [id] = [...ids];
    await waitForJob(stack, id!, (job) => isTerminalJob(job) && job.settlement !== undefined);
    const { rows } = await stack.db.pool.query(
      `SELECT count(*)::int AS n FROM settlements s JOIN jobs j ON j.id = s.job_id WHERE j.principal_id = 'alice' AND j.idempotency_key = $1`,
      [key],
    );
    expect(rows[0].n).toBe(1);
  });

  it("counts each attempt's tokens and cost as the ledger recorded them, by provider, model and operation", async () => {
    // Arrange
    const labels = { operation: 'support.reply', provider: 'sim-primary', model: 'sim-small' };
    type Counter = { get(): Promise<{ values: Array<{ labels: Record<string, unknown>; value: number }> }> };
    const valueOf = async (counter: Counter, only: Record<string, string>) =>
      (await counter.get()).values.filter((v) => Object.entries(only).every(([k, want]) => v.labels[k] === want)).reduce((sum, v) => sum + v.value, 0);
    const counted = async () => ({
      input: await valueOf(stack.metrics.attemptTokens, { ...labels, direction: 'input' }),
      output: await valueOf(stack.metrics.attemptTokens, { ...labels, direction: 'output' }),
      cost: await valueOf(stack.metrics.attemptCost, { ...labels, currency: 'USD' }),
    });
    const before = await counted();

    // Act
    const job = await run('Counted');

    // Assert: exactly the winner's recorded usage, once.
    const usage = job.attempts[0].usage;
    expect(job.attempts).toHaveLength(1);
    expect(usage.inputTokens).toBeGreaterThan(0);
    const after = await counted();
    expect(after.input - before.input).toBe(usage.inputTokens);
    expect(after.output - before.output).toBe(usage.outputTokens);
    expect(after.cost - before.cost).toBeCloseTo(Number(usage.cost), 12);
  });

  it('shows a tenant its own job with usage and settlement, and another tenant nothing', async () => {
    const job = await run('Mine');
    const mine = await stack.app.inject({ method: 'GET', url: `/v1/jobs/${job.id}`, headers: auth(KEYS.alice) });
    const theirs = await stack.app.inject({ method: 'GET', url: `/v1/jobs/${job.id}`, headers: auth(KEYS.bob) });
    expect(mine.json().settlement.billable).toBe(job.settlement.billable);
    expect(theirs.statusCode).toBe(404);
  });
});

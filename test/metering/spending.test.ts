import { AttemptStatus, commitAttemptResult, failAttempt, markAttemptRunning, markAttemptUnknown, openAttempt, resolveAttempt, type AttemptRecord } from '../../src/ledger/attempts';
import { spentBudget, utcDay } from '../../src/ledger/budgets';
import { failJob } from '../../src/ledger/jobs';
import { costByOperation } from '../../src/ledger/overview';
import { SIM_PRICES } from '../../src/providers/config';
import { auth, KEYS, startTestStack, submitReply, type TestStack } from '../harness/stack';

/**
 * Invariant 15, one account of spending: every cost an attempt incurred —
 * settled, learned after settlement (an adjustment), or on a failed job —
 * is in the totals that GET /v1/usage, the daily budgets and the console's
 * cost overview read, and the three agree.
 */
describe('one account of spending', () => {
  let stack: TestStack;
  const OUTPUT = { reply: 'We are on it.', escalate: false };
  const from = '2000-01-01T00:00:00Z';
  const to = '2100-01-01T00:00:00Z';

  beforeAll(async () => {
    // No worker: attempts are driven through the ledger by hand. A cost budget of 0.008 USD a day.
    stack = await startTestStack({ worker: false, env: { ONCEFLOW_BUDGET_COST_PER_DAY: '0.008', ONCEFLOW_BUDGET_CURRENCY: 'USD' } });
  });
  afterAll(() => stack.close());

  async function opened(jobId: string, provider: string, model: string): Promise<AttemptRecord> {
    const result = await openAttempt(stack.db.pool, { jobId, provider, model });
    if (result.kind !== 'opened') throw new Error(`no attempt opened: ${result.kind}`);
    await markAttemptRunning(stack.db.pool, result.attempt.id);
    return result.attempt;
  }

  it("counts a late answer's cost, learned after settlement, in the usage report, the budget and the overview alike", async () => {
    // Arrange: an all-attempts job. A times out and is resolved with its usage unknown; B wins
    // (0.0075, under the 0.008 budget); then A's answer arrives (0.0009): an adjustment.
    const job = (await submitReply(stack, { message: 'late usage counts', apiKey: KEYS.bob })).json();
    await stack.db.pool.query(`UPDATE jobs SET billing = 'all_attempts' WHERE id = $1`, [job.id]);
    const a = await opened(job.id, 'sim-primary', 'sim-small');
    await markAttemptUnknown(stack.db.pool, a.id, { class: 'timeout', detail: 'no answer in time' });
    await resolveAttempt(stack.db.pool, { jobId: job.id, attemptId: a.id, outcome: 'failed', reason: 'gave up', by: 'ops' });
    const b = await opened(job.id, 'sim-backup', 'sim-large');
    await commitAttemptResult(stack.db.pool, b.id, OUTPUT, { terminal: true, usage: { inputTokens: 1000, outputTokens: 500, price: SIM_PRICES.large } });
    const beforeLate = await submitReply(stack, { message: 'under the budget still', apiKey: KEYS.bob });

    // Act
    await commitAttemptResult(stack.db.pool, a.id, OUTPUT, { terminal: true, usage: { inputTokens: 2000, outputTokens: 1000, price: SIM_PRICES.small } });
    const report = await stack.app.inject({ method: 'GET', url: `/v1/usage?from=${from}&to=${to}`, headers: auth(KEYS.bob) });
    const byDay = await stack.app.inject({ method: 'GET', url: `/v1/usage?from=${from}&to=${to}&groupBy=day`, headers: auth(KEYS.bob) });
    const afterLate = await submitReply(stack, { message: 'over the budget now', apiKey: KEYS.bob });
    const overview = await costByOperation(stack.db.pool, new Date(from));

    // Assert: 0.0075 + 0.0009, both billable under all-attempts; one job.
    expect(beforeLate.statusCode).toBe(202);
    expect(report.json().lines).toEqual([{ key: 'support.reply', currency: 'USD', jobs: 1, inputTokens: 3000, outputTokens: 1500, providerCost: '0.0084', billable: '0.0084' }]);
    expect(byDay.json().lines).toEqual([expect.objectContaining({ jobs: 1, providerCost: '0.0084', billable: '0.0084' })]);
    expect(afterLate.statusCode).toBe(429);
    expect(afterLate.json()).toMatchObject({ budget: 'cost' });
    expect(overview).toEqual([expect.objectContaining({ operation: 'support.reply', currency: 'USD', jobs: 1, providerCost: '0.0084', billable: '0.0084', inputTokens: 3000, outputTokens: 1500 })]);
  });

  it('limits what is billable by default, or what the provider was paid when the budget says so', async () => {
    // Arrange: alice's job fails under winner billing after an attempt that cost 0.0009: paid, not billed.
    const job = (await submitReply(stack, { message: 'a failure still costs' })).json();
    const a = await opened(job.id, 'sim-primary', 'sim-small');
    const usage = { inputTokens: 2000, outputTokens: 1000, price: SIM_PRICES.small };
    expect(await failAttempt(stack.db.pool, a.id, AttemptStatus.running, { class: 'contract_violation', detail: 'prose', usage })).toBe(true);
    expect(await failJob(stack.db.pool, job.id, { type: 'attempts_exhausted', detail: 'no attempt left' })).toBe(true);
    const day = utcDay(new Date()).start;

    // Act
    const billable = await spentBudget(stack.db.pool, 'alice', { costPerDay: '0.0005', currency: 'USD', measure: 'billable' }, day);
    const providerCost = await spentBudget(stack.db.pool, 'alice', { costPerDay: '0.0005', currency: 'USD', measure: 'provider_cost' }, day);

    // Assert
    expect(billable).toBeUndefined();
    expect(providerCost).toBe('cost');
  });

  it('counts an attempt priced in another currency than its job was settled in, in its own currency', async () => {
    // Arrange: alice's A cost 0.50 EUR (reported, its model priced in euros) and failed; B won in USD: the settlement is in USD
    const since = new Date();
    const job = (await submitReply(stack, { message: 'two currencies' })).json();
    const a = await opened(job.id, 'sim-primary', 'sim-small');
    expect(await failAttempt(stack.db.pool, a.id, AttemptStatus.running, { class: 'contract_violation', detail: 'prose', usage: { inputTokens: 10, outputTokens: 10 } })).toBe(true);
    await stack.db.pool.query(`UPDATE attempts SET cost = 0.5, cost_currency = 'EUR' WHERE id = $1`, [a.id]);
    const b = await opened(job.id, 'sim-backup', 'sim-large');
    await commitAttemptResult(stack.db.pool, b.id, OUTPUT, { terminal: true, usage: { inputTokens: 1000, outputTokens: 500, price: SIM_PRICES.large } });

    // Act
    const lines = (await stack.app.inject({ method: 'GET', url: `/v1/usage?from=${since.toISOString()}&to=${to}`, headers: auth(KEYS.alice) })).json().lines;

    // Assert: the euros are in the totals, never added to the dollars; the job is counted once
    expect(lines).toEqual([
      { key: 'support.reply', currency: 'EUR', jobs: 0, inputTokens: 0, outputTokens: 0, providerCost: '0.5', billable: '0' },
      { key: 'support.reply', currency: 'USD', jobs: 1, inputTokens: 1010, outputTokens: 510, providerCost: '0.0075', billable: '0.0075' },
    ]);
  });
});

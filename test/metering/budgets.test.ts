import { randomUUID } from 'node:crypto';
import { KEYS, startTestStack, submitReply, type TestStack } from '../harness/stack';

/** Daily budgets per principal at admission: past one, a new intent is a 429; a replay is always answered. */
describe('budgets', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false, env: { ONCEFLOW_BUDGET_TOKENS_PER_DAY: '1000', ONCEFLOW_BUDGET_COST_PER_DAY: '0.01', ONCEFLOW_BUDGET_CURRENCY: 'USD' } });
  });
  afterAll(() => stack.close());

  /** A settlement of today for a principal, as the terminal write would leave it. */
  async function settled(principal: string, usage: { tokens: number; billable: string; currency?: string }): Promise<void> {
    await stack.db.pool.query(
      `INSERT INTO settlements (job_id, principal_id, operation, job_status, billing, currency, provider_cost, billable, input_tokens, output_tokens, attempts, attempts_unpriced, attempt_costs)
       VALUES ($1, $2, 'support.reply', 'succeeded', 'winner', $3, $4, $4, $5, 0, 1, 0, '[]')`,
      [randomUUID(), principal, usage.currency ?? 'USD', usage.billable, usage.tokens],
    );
  }

  it('refuses the new intent of a principal past its daily token budget, and still answers a replay of an earlier key', async () => {
    // Arrange: alice's earlier job, then settlements that use up her 1000 tokens.
    const earlier = await submitReply(stack, { key: 'before-the-budget', message: 'early' });
    expect(earlier.statusCode).toBe(202);
    await settled('alice', { tokens: 600, billable: '0' });
    expect((await submitReply(stack, { message: 'still under' })).statusCode).toBe(202);
    await settled('alice', { tokens: 400, billable: '0' });

    // Act
    const refused = await submitReply(stack, { message: 'over the budget' });
    const replay = await submitReply(stack, { key: 'before-the-budget', message: 'early' });
    const bob = await submitReply(stack, { message: 'another principal', apiKey: KEYS.bob });

    // Assert
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    const tomorrow = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1)).toISOString();
    expect(refused.json()).toMatchObject({ type: 'https://onceflow.dev/problems/budget-exhausted', status: 429, budget: 'tokens', resetsAt: tomorrow });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(86_400);
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json().id).toBe(earlier.json().id);
    expect(bob.statusCode).toBe(202);
  });

  it('refuses past the daily cost budget, counting only the budget currency', async () => {
    // Arrange: bob has billed 0.0075 USD (and 5 EUR, which a USD budget never adds in).
    await settled('bob', { tokens: 1, billable: '0.0075' });
    await settled('bob', { tokens: 1, billable: '5', currency: 'EUR' });
    expect((await submitReply(stack, { message: 'under the cost budget', apiKey: KEYS.bob })).statusCode).toBe(202);
    await settled('bob', { tokens: 1, billable: '0.0025' });

    // Act
    const refused = await submitReply(stack, { message: 'over the cost budget', apiKey: KEYS.bob });

    // Assert
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ budget: 'cost', detail: expect.stringContaining('0.01 USD') });
  });

  it('counts only what was settled today', async () => {
    // Arrange: everything alice was billed, five times her token budget among it, was settled yesterday.
    await settled('alice', { tokens: 5000, billable: '0' });
    await stack.db.pool.query(`UPDATE settlements SET settled_at = settled_at - interval '1 day' WHERE principal_id = 'alice'`);

    // Act and Assert
    expect((await submitReply(stack, { message: 'a new day' })).statusCode).toBe(202);
  });
});

import { commitAttemptResult, markAttemptRunning, openAttempt } from '../../src/ledger/attempts';
import { SIM_PRICES } from '../../src/providers/config';
import { auth, KEYS, startTestStack, submitReply, type TestStack } from '../harness/stack';

/** GET /v1/usage: a principal's totals, from settlements only. */
describe('usage report', () => {
  let stack: TestStack;
  const from = '2000-01-01T00:00:00Z';
  const to = '2100-01-01T00:00:00Z';

  /** A job of `apiKey` won by one sim-backup attempt of the given usage (1000 in, 500 out cost 0.0075). */
  async function settledJob(apiKey: string, message: string, usage: { inputTokens: number; outputTokens: number }): Promise<string> {
    const job = (await submitReply(stack, { message, apiKey })).json();
    const opened = await openAttempt(stack.db.pool, { jobId: job.id, provider: 'sim-backup', model: 'sim-large' });
    if (opened.kind !== 'opened') throw new Error('no attempt opened');
    await markAttemptRunning(stack.db.pool, opened.attempt.id);
    await commitAttemptResult(stack.db.pool, opened.attempt.id, { reply: 'ok', escalate: false }, { terminal: true, usage: { ...usage, price: SIM_PRICES.large } });
    return job.id;
  }

  const usage = (query: string, key: string = KEYS.alice) => stack.app.inject({ method: 'GET', url: `/v1/usage?${query}`, headers: auth(key) });

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    await settledJob(KEYS.alice, 'first', { inputTokens: 1000, outputTokens: 500 });
    await settledJob(KEYS.alice, 'second', { inputTokens: 3000, outputTokens: 1 });
    await settledJob(KEYS.bob, 'bobs', { inputTokens: 7, outputTokens: 7 });
    // A job that is not terminal has no settlement and counts for nothing.
    await submitReply(stack, { message: 'still open' });
  });
  afterAll(() => stack.close());

  it("totals a tenant's own settlements per operation, in exact decimals", async () => {
    // Act
    const response = await usage(`from=${from}&to=${to}&groupBy=operation`);

    // Assert: 0.0075 + (3000 * 2.50 + 1 * 10.00) / 1e6 = 0.0075 + 0.00751 = 0.01501
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      principal: 'alice',
      from: '2000-01-01T00:00:00.000Z',
      to: '2100-01-01T00:00:00.000Z',
      groupBy: 'operation',
      lines: [{ key: 'support.reply', currency: 'USD', jobs: 2, inputTokens: 4000, outputTokens: 501, providerCost: '0.01501', billable: '0.01501' }],
    });
  });

  it('groups by the UTC day of settlement', async () => {
    const response = await usage(`from=${from}&to=${to}&groupBy=day`);
    const today = new Date().toISOString().slice(0, 10);
    expect(response.json().lines).toEqual([expect.objectContaining({ key: today, jobs: 2, billable: '0.01501' })]);
  });

  it('counts only settlements inside [from, to)', async () => {
    const response = await usage(`from=${from}&to=2001-01-01T00:00:00Z`);
    expect(response.json().lines).toEqual([]);
  });

  it("lets an operator read any principal's usage, and no tenant another's", async () => {
    const asOperator = await usage(`from=${from}&to=${to}&principal=bob`, KEYS.operator);
    const aliceAsksForBob = await usage(`from=${from}&to=${to}&principal=bob`);
    expect(asOperator.json()).toMatchObject({ principal: 'bob', lines: [{ jobs: 1, inputTokens: 7, outputTokens: 7 }] });
    expect(aliceAsksForBob.statusCode).toBe(403);
  });

  it('covers the current UTC month when from and to are left out, as a billing page does', async () => {
    // Arrange
    const now = new Date();
    const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
    const nextMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();

    // Act
    const response = await usage('');
    const fromOnly = await usage(`from=${from}`);

    // Assert
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ from: monthStart, to: nextMonth, lines: [expect.objectContaining({ jobs: 2, billable: '0.01501' })] });
    expect(fromOnly.json()).toMatchObject({ from: '2000-01-01T00:00:00.000Z', to: nextMonth });
  });

  it('starts at the beginning of the month `to` ends in when only `to` is given', async () => {
    // Act
    const response = await usage('to=2026-03-15T00:00:00Z');

    // Assert
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ from: '2026-03-01T00:00:00.000Z', to: '2026-03-15T00:00:00.000Z' });
  });

  it.each([
    ['a from that is not a date-time', `from=yesterday&to=${to}`],
    ['an unknown grouping', `from=${from}&to=${to}&groupBy=week`],
    ['to not after from', `from=${to}&to=${from}`],
    ['an unknown parameter', `from=${from}&to=${to}&currency=USD`],
  ])('answers 400 problem+json for %s', async (_case, query) => {
    const response = await usage(query);
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({ type: 'https://onceflow.dev/problems/validation', status: 400 });
  });

  it('answers 400 to an operator who names no principal', async () => {
    const response = await usage(`from=${from}&to=${to}`, KEYS.operator);
    expect(response.statusCode).toBe(400);
    expect(response.json().errors).toEqual([expect.objectContaining({ pointer: '/principal' })]);
  });
});

import { randomUUID } from 'node:crypto';
import { auth, isTerminalJob, KEYS, startTestStack, waitForJob, type TestStack } from '../harness/stack';

function summarize(stack: TestStack, text: string, key = randomUUID()) {
  return stack.app.inject({
    method: 'POST',
    url: '/v1/jobs',
    headers: { ...auth(KEYS.alice), 'idempotency-key': key },
    payload: { operation: 'ticket.summarize', input: { ticketId: 'T-sum', text } },
  });
}

describe('ticket.summarize, the read-only demo operation, on the real stack', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ env: { ONCEFLOW_ATTEMPT_TIMEOUT_MS: '1500' } });
  });
  afterAll(() => stack.close());

  it('succeeds with a result that fits its contract, and performs no effect', async () => {
    // Arrange / Act
    const submitted = await summarize(stack, 'My parcel is late. Please refund the shipping.');
    expect(submitted.statusCode).toBe(202);
    const job = await waitForJob(stack, submitted.json().id, isTerminalJob);

    // Assert
    expect(job.status).toBe('succeeded');
    expect(job.result).toEqual({ summary: expect.stringMatching(/^sim-primary: summary of the request \[ref [0-9a-f]{8}\]$/), priority: 'high' });
    expect(job.attempts).toEqual([expect.objectContaining({ provider: 'sim-primary', status: 'succeeded' })]);
    expect(job.effects).toEqual([]);
    const delivered = (await fetch(`${stack.sims.downstream.url}/v1/messages?ticketId=T-sum`).then((r) => r.json())) as any;
    expect(delivered.messages ?? delivered).toHaveLength(0);
  });

  it('fails an answer with an extra key as a contract violation, keeping it as evidence, and the verified backup wins', async () => {
    // Arrange / Act
    const submitted = await summarize(stack, 'The screen is cracked. @sim(sim-primary:extra-key)');
    const job = await waitForJob(stack, submitted.json().id, isTerminalJob);

    // Assert
    expect(job.status).toBe('succeeded');
    expect(job.attempts).toEqual([
      expect.objectContaining({ provider: 'sim-primary', status: 'failed', error: expect.objectContaining({ class: 'contract_violation' }) }),
      expect.objectContaining({ provider: 'sim-backup', status: 'succeeded' }),
    ]);
    expect(JSON.stringify(job.attempts[0].evidence)).toContain('confidence');
    expect(job.result).toEqual({ summary: expect.stringMatching(/^sim-backup: summary of the request/), priority: 'low' });
  });

  it('hedges when its first attempt times out (it is read-only), and the backup answers while the first is still unknown', async () => {
    // Arrange / Act: the primary never answers.
    const submitted = await summarize(stack, 'My order never came. @sim(sim-primary:hang)');
    const job = await waitForJob(stack, submitted.json().id, isTerminalJob, 30_000);

    // Assert
    expect(job.status).toBe('succeeded');
    expect(job.attempts.map((a: any) => [a.provider, a.status])).toEqual([
      ['sim-primary', 'unknown'],
      ['sim-backup', 'succeeded'],
    ]);
    expect(job.events.map((e: any) => e.type)).toContain('attempt.hedged');
  }, 40_000);

  it('fails prose the same way', async () => {
    const submitted = await summarize(stack, 'Where is my order? @sim(sim-primary:prose)');
    const job = await waitForJob(stack, submitted.json().id, isTerminalJob);
    expect(job.attempts.map((a: any) => [a.provider, a.status, a.error?.class])).toEqual([
      ['sim-primary', 'failed', 'contract_violation'],
      ['sim-backup', 'succeeded', undefined],
    ]);
  });

  it('refuses an input that breaks its schema with 400 naming the field', async () => {
    const response = await stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...auth(KEYS.alice), 'idempotency-key': randomUUID() },
      payload: { operation: 'ticket.summarize', input: { ticketId: 'T-sum' } },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors).toEqual([expect.objectContaining({ pointer: '/input/text' })]);
  });
});

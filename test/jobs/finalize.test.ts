import { randomUUID } from 'node:crypto';
import { createRegistry } from '../../src/operations/registry';
import { auth, isTerminalJob, KEYS, startTestStack, waitForJob, type TestStack } from '../harness/stack';

const supportReply = createRegistry().get('support.reply')!;
/** The job's result is what finalize makes of the output and the receipts, not the raw output. */
const finalize = (output: { reply: string; escalate: boolean }, receipts: Record<string, Record<string, unknown>>) => ({ text: output.reply.toUpperCase(), receipts: Object.keys(receipts) });
const withEffects = { ...supportReply, name: 'support.final', finalize };
const withoutEffects = { ...supportReply, name: 'support.final-draft', effects: undefined, finalize };
/** A finalize that cannot take what the primary answers. */
const picky = { ...withoutEffects, name: 'support.final-picky', finalize: (output: { reply: string; escalate: boolean }) => {
  if (output.reply.startsWith('sim-primary')) throw new Error('no primary answers here');
  return { text: output.reply };
} };

describe("an operation's finalize", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ operations: createRegistry([supportReply, withEffects, withoutEffects, picky]) });
  });
  afterAll(() => stack.close());

  it.each([
    ['with effects', 'support.final', ['message.send']],
    ['without effects', 'support.final-draft', []],
  ])('makes the job result of an operation %s', async (_case, operation, receipts) => {
    // Act
    const submitted = await stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...auth(KEYS.alice), 'idempotency-key': randomUUID() },
      payload: { operation, input: { ticketId: `T-${randomUUID().slice(0, 8)}`, customerMessage: 'Where is my order?', channel: 'email' } },
    });
    const job = await waitForJob(stack, submitted.json().id, isTerminalJob);

    // Assert
    expect(job.status).toBe('succeeded');
    expect(job.result).toEqual({ text: expect.stringMatching(/^[^a-z]+$/), receipts });
  });

  it('fails an answer its finalize throws on as the contract would, and the next provider answers', async () => {
    // Act
    const submitted = await stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...auth(KEYS.alice), 'idempotency-key': randomUUID() },
      payload: { operation: 'support.final-picky', input: { ticketId: 'T-picky', customerMessage: 'Where is my order?', channel: 'email' } },
    });
    const job = await waitForJob(stack, submitted.json().id, isTerminalJob);

    // Assert
    expect(job.status).toBe('succeeded');
    expect(job.attempts.map((a: any) => [a.provider, a.status, a.error?.class])).toEqual([
      ['sim-primary', 'failed', 'contract_violation'],
      ['sim-backup', 'succeeded', undefined],
    ]);
    expect(job.attempts[0].error.detail).toMatch(/finalize threw on this output: no primary answers here/);
    expect(job.result).toEqual({ text: expect.stringMatching(/^sim-backup/) });
  });
});


import type { HttpEffectDeclaration } from '../../src/effects/http-declaration';
import { createHttpEffect } from '../../src/effects/http-effect';
import { createMessageSend } from '../../src/effects/message-send';
import { createEffectRunner } from '../../src/effects/runner';
import { verifyEffects } from '../../src/effects/verify/verify-effects';
import type { EffectAdapter } from '../../src/effects/types';
import { getEffect } from '../../src/ledger/effects';
import { getJob } from '../../src/ledger/jobs';
import { createMetrics } from '../../src/metrics/metrics';
import { createRegistry } from '../../src/operations/registry';
import { startSimDownstream, type SimDownstream } from '../../src/sim/downstream-server';
import { createTestDatabase, type TestDatabase } from '../harness/database';
import { jobWithWinner as jobWithWinnerIn } from '../harness/effect-jobs';

/**
 * A declared HTTP effect through the effect ledger, against a real
 * PostgreSQL and the real messaging simulator: `message.send` written as a
 * declaration instead of code. Recovery asks for the receipt first, and
 * never sends twice what the downstream would take twice (invariants 7, 8).
 */
describe('a declared HTTP effect in the effect ledger', () => {
  let db: TestDatabase;
  let downstream: SimDownstream;
  let dedupingDownstream: SimDownstream;
  beforeAll(async () => {
    [db, downstream, dedupingDownstream] = await Promise.all([createTestDatabase(), startSimDownstream({}), startSimDownstream({ dedupe: true })]);
  });
  afterAll(async () => {
    await Promise.all([db.drop(), downstream.close(), dedupingDownstream.close()]);
  });

  /** The messaging service as the operations file would declare it. */
  const messageSend = (overrides: Partial<HttpEffectDeclaration> = {}): HttpEffectDeclaration => ({
    name: 'message.send',
    url: '${MESSAGES_URL}/v1/messages',
    body: { ticketId: '{{input.ticketId}}', channel: '{{input.channel}}', text: '{{output.reply}}' },
    receipt: { messageId: '/messageId' },
    lookup: { url: '${MESSAGES_URL}/v1/messages/by-key/{{key}}' },
    deduplicates: false,
    timeoutMs: 300,
    verify: { probes: [{ name: 'a message', input: { ticketId: 'V-1', channel: 'email' }, output: { reply: 'a drill' } }] },
    ...overrides,
  });

  const runnerWith = (adapter: EffectAdapter, metrics = createMetrics()) =>
    createEffectRunner({
      db: db.pool,
      metrics,
      adapters: new Map([[adapter.name, adapter]]),
      operations: createRegistry(),
      settings: { leaseMs: 30_000, maxTries: 2, backoffMs: 20, callTimeoutMs: 300 },
    });
  const declaredAgainst = (target: SimDownstream, overrides: Partial<HttpEffectDeclaration> = {}) => createHttpEffect(messageSend(overrides), { MESSAGES_URL: target.url });

  const jobWithWinner = (reply: string) => jobWithWinnerIn(db.pool, reply);
  beforeAll(async () => {
    // As a start does: the drills show what recovery may rely on, for the two declarations recovered from below.
    for (const adapter of [declaredAgainst(downstream), declaredAgainst(dedupingDownstream, { lookup: undefined, deduplicates: true })]) {
      await verifyEffects(db.pool, new Map([[adapter.name, adapter]]));
    }
  });
  const deliveriesOf = (target: SimDownstream, ticketId: string) => target.deliveries().filter((d) => d.ticketId === ticketId);
  /** The lease has run out: recovery may take the effect over. */
  const expireLease = (jobId: string) => db.pool.query(`UPDATE effects SET lease_expires_at = now() - interval '1 second' WHERE job_id = $1`, [jobId]);

  it('settles with the same receipt as the built-in message.send, and the job succeeds with it', async () => {
    // Arrange
    const builtIn = await jobWithWinner('Your order ships today.');
    const declared = await jobWithWinner('Your order ships today.');

    // Act
    const byCode = await runnerWith(createMessageSend({ baseUrl: downstream.url, deduplicates: false, timeoutMs: 300 })).perform(builtIn.jobId, 'message.send', { owner: 'worker-a' });
    const byDeclaration = await runnerWith(declaredAgainst(downstream)).perform(declared.jobId, 'message.send', { owner: 'worker-a' });

    // Assert
    const [sent] = deliveriesOf(downstream, declared.ticketId);
    expect(deliveriesOf(downstream, declared.ticketId)).toHaveLength(1);
    expect(sent).toMatchObject({ channel: 'email', text: 'Your order ships today.' });
    expect(byDeclaration).toMatchObject({ status: 'succeeded', receipt: { messageId: sent!.messageId }, jobTerminal: true, jobStatus: 'succeeded' });
    expect(Object.keys(byDeclaration.receipt!)).toEqual(Object.keys(byCode.receipt!));
    expect((await getJob(db.pool, declared.jobId))?.status).toBe('succeeded');
  });

  it('recovers a reset after the delivery by finding the receipt by key, without sending again', async () => {
    // Arrange: the downstream records the message, then resets the connection.
    const { jobId, ticketId } = await jobWithWinner('We are on it. @sink(reset)');
    const metrics = createMetrics();
    const runner = runnerWith(declaredAgainst(downstream), metrics);
    const first = await runner.perform(jobId, 'message.send', { owner: 'worker-a' });

    // Act
    await expireLease(jobId);
    const recovered = await runner.recover(jobId, 'message.send', { owner: 'worker-b' });

    // Assert
    expect(first.status).toBe('pending');
    const sent = deliveriesOf(downstream, ticketId);
    expect(sent).toHaveLength(1);
    expect(recovered).toMatchObject({ status: 'succeeded', receipt: { messageId: sent[0]!.messageId, foundBy: 'lookup' }, jobStatus: 'succeeded' });
    expect(await getEffect(db.pool, jobId, 'message.send')).toMatchObject({ tries: 1, owners: 2 });
    expect((await metrics.receiptsFound.get()).values[0]?.value).toBe(1);
  });

  it('sends a maybe-delivered message to review when it can be neither looked up nor repeated', async () => {
    // Arrange
    const { jobId, ticketId } = await jobWithWinner('Refund on its way. @sink(reset)');
    const runner = runnerWith(declaredAgainst(downstream, { lookup: undefined, deduplicates: false }));
    await runner.perform(jobId, 'message.send', { owner: 'worker-a' });

    // Act
    await expireLease(jobId);
    const recovered = await runner.recover(jobId, 'message.send', { owner: 'worker-b' });

    // Assert
    expect(recovered).toMatchObject({ status: 'needs_review', error: { class: 'no_lookup_unsafe_to_repeat' }, jobTerminal: false });
    expect(deliveriesOf(downstream, ticketId)).toHaveLength(1);
  });

  it('repeats with the same key when the downstream deduplicates, and the downstream holds one message', async () => {
    // Arrange: the first delivery is recorded and its connection reset; the repeat is answered.
    const { jobId, ticketId } = await jobWithWinner('Replacement sent. @sink(reset-once)');
    const runner = runnerWith(declaredAgainst(dedupingDownstream, { lookup: undefined, deduplicates: true }));
    const first = await runner.perform(jobId, 'message.send', { owner: 'worker-a' });

    // Act
    await expireLease(jobId);
    const recovered = await runner.recover(jobId, 'message.send', { owner: 'worker-b' });

    // Assert
    expect(first.status).toBe('pending');
    const sent = deliveriesOf(dedupingDownstream, ticketId);
    expect(sent).toHaveLength(1);
    const effect = await getEffect(db.pool, jobId, 'message.send');
    expect(effect).toMatchObject({ status: 'succeeded', tries: 2, receipt: { messageId: sent[0]!.messageId } });
    expect(sent[0]!.idempotencyKey).toBe(effect!.key);
    expect(recovered).toMatchObject({ status: 'succeeded', jobStatus: 'succeeded' });
  });
});

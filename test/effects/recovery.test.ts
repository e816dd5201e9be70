import { randomUUID } from 'node:crypto';
import { createEffectRunner } from '../../src/effects/runner';
import { verifyEffects } from '../../src/effects/verify/verify-effects';
import { recordEffectVerification } from '../../src/ledger/effect-verifications';
import type { EffectAdapter, LookupResult, PerformResult } from '../../src/effects/types';
import { createMessageSend } from '../../src/effects/message-send';
import { requestDigest } from '../../src/jobs/digest';
import { jobWorkflowId } from '../../src/jobs/scope';
import { commitAndClaim, commitAttemptResult, markAttemptRunning, openAttempt } from '../../src/ledger/attempts';
import { beginEffectTry, claimEffect, effectKey, getEffect } from '../../src/ledger/effects';
import { admitJob, cancelJob } from '../../src/ledger/jobs';
import { createMetrics } from '../../src/metrics/metrics';
import { createRegistry } from '../../src/operations/registry';
import { startSimDownstream, type SimDownstream } from '../../src/sim/downstream-server';
import { createTestDatabase, type TestDatabase } from '../harness/database';
import { jobWithWinner as jobWithWinnerIn } from '../harness/effect-jobs';

/**
 * The effect ledger on its own, against a real PostgreSQL and the real
 * messaging simulator: claims, leases and recovery (invariants 7 and 8).
 */
describe('effect claims and recovery', () => {
  let db: TestDatabase;
  let downstream: SimDownstream;
  let dedupingDownstream: SimDownstream;
  beforeAll(async () => {
    [db, downstream, dedupingDownstream] = await Promise.all([createTestDatabase(), startSimDownstream({}), startSimDownstream({ dedupe: true })]);
    // As a start does: the drills show what recovery may rely on (a lookup that tells, a deduplication) for both downstreams.
    for (const target of [downstream, dedupingDownstream]) await verifyEffects(db.pool, new Map([['message.send', adapterFor(target)]]));
  });
  afterAll(async () => {
    await Promise.all([db.drop(), downstream.close(), dedupingDownstream.close()]);
  });

  // Long enough that a loaded machine cannot let a lease lapse between two steps that rely on it being held.
  const LEASE_MS = 2_000;
  const adapterFor = (target: SimDownstream) => createMessageSend({ baseUrl: target.url, deduplicates: target === dedupingDownstream, timeoutMs: 300 });
  const runnerFor = (target: SimDownstream, metrics = createMetrics()) =>
    createEffectRunner({
      db: db.pool,
      metrics,
      adapters: new Map([['message.send', adapterFor(target)]]),
      operations: createRegistry(),
      settings: { leaseMs: LEASE_MS, maxTries: 2, backoffMs: 20 },
    });

  const jobWithWinner = (reply: string) => jobWithWinnerIn(db.pool, reply);
  const deliveriesOf = (target: SimDownstream, ticketId: string) => target.deliveries().filter((d) => d.ticketId === ticketId);
  const waitForLease = () => new Promise((resolve) => setTimeout(resolve, LEASE_MS + 100));

  it('lets exactly one of several racing workers perform the effect', async () => {
    // Arrange
    const { jobId, ticketId } = await jobWithWinner('Your order ships today.');
    const runner = runnerFor(downstream);

    // Act
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => runner.perform(jobId, 'message.send', { owner: `worker-${i}` })));

    // Assert
    expect(deliveriesOf(downstream, ticketId)).toHaveLength(1);
    expect(results.filter((r) => r.status === 'succeeded' && r.receipt)).not.toHaveLength(0);
    const effect = await getEffect(db.pool, jobId, 'message.send');
    expect(effect).toMatchObject({ status: 'succeeded', owners: 1, receipt: { messageId: deliveriesOf(downstream, ticketId)[0]!.messageId } });
  });

  it('recovers a disconnect after the effect by finding the receipt, without sending again', async () => {
    // Arrange: the downstream records the message, then resets the connection.
    const { jobId, ticketId } = await jobWithWinner('We are on it. @sink(reset)');
    const metrics = createMetrics();
    const runner = runnerFor(downstream, metrics);
    const first = await runner.perform(jobId, 'message.send', { owner: 'worker-a' });
    expect(first.status).toBe('pending');

    // Act
    const early = await runner.recover(jobId, 'message.send', { owner: 'worker-b' });
    await waitForLease();
    const recovered = await runner.recover(jobId, 'message.send', { owner: 'worker-b' });

    // Assert
    expect(early.status).toBe('pending'); // the lease was still valid: not stolen
    expect(recovered.status).toBe('succeeded');
    const deliveries = deliveriesOf(downstream, ticketId);
    expect(deliveries).toHaveLength(1);
    expect(recovered.receipt).toEqual({ messageId: deliveries[0]!.messageId, foundBy: 'lookup' });
    expect((await metrics.receiptsFound.get()).values[0]?.value).toBe(1);
  });

  it('never steals a lease that is still valid', async () => {
    // Arrange: worker A claimed the effect and is (as far as anyone knows) still performing it.
    const { jobId, ticketId } = await jobWithWinner('Thanks!');
    await claimEffect(db.pool, { jobId, name: 'message.send', owner: 'worker-a', leaseMs: 60_000 });

    // Act
    const attempt = await runnerFor(downstream).recover(jobId, 'message.send', { owner: 'worker-b' });

    // Assert
    expect(attempt.status).toBe('pending');
    expect(await getEffect(db.pool, jobId, 'message.send')).toMatchObject({ leaseOwner: 'worker-a', owners: 1 });
    expect(deliveriesOf(downstream, ticketId)).toHaveLength(0);
  });

  it('sends it, once, when its verified lookup says the downstream never received it, though a repeat would not be safe', async () => {
    // Arrange: A claimed it, said it was sending, and vanished: the message may be out, or not.
    const { jobId, ticketId } = await jobWithWinner('Hello again.');
    const claim = await claimEffect(db.pool, { jobId, name: 'message.send', owner: 'worker-a', leaseMs: 50 });
    if (!claim.claimed) throw new Error('no claim');
    expect(await beginEffectTry(db.pool, claim.effect.id, 'worker-a')).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 100));

    // Act
    const recovered = await runnerFor(downstream).recover(jobId, 'message.send', { owner: 'worker-b' });

    // Assert: "not found" from a lookup whose drills passed means it never arrived: this is its first send
    expect(recovered.status).toBe('succeeded');
    expect(deliveriesOf(downstream, ticketId)).toHaveLength(1);
  });

  it('performs, once, an effect whose owner vanished after the claim and before sending: the ledger shows nothing went out', async () => {
    // Arrange: A claimed it and vanished before its try began (the phase is still `claimed`).
    const { jobId, ticketId } = await jobWithWinner('Claimed, never sent.');
    await claimEffect(db.pool, { jobId, name: 'message.send', owner: 'worker-a', leaseMs: 50 });
    await new Promise((resolve) => setTimeout(resolve, 100));

    // Act: two recoverers race for it.
    const [b, c] = await Promise.all([
      runnerFor(downstream).recover(jobId, 'message.send', { owner: 'worker-b' }),
      runnerFor(downstream).recover(jobId, 'message.send', { owner: 'worker-c' }),
    ]);

    // Assert
    const sent = deliveriesOf(downstream, ticketId);
    expect(sent).toHaveLength(1);
    expect([b.status, c.status]).toContain('succeeded');
    expect(await getEffect(db.pool, jobId, 'message.send')).toMatchObject({ status: 'succeeded', owners: 2, tries: 1, receipt: { messageId: sent[0]!.messageId } });
  });

  /** A support.reply job whose winning answer claimed its first effect in the commit, as a worker's call does. */
  async function jobWonWithClaim(reply: string, claim: { owner: string; leaseMs: number; sending: boolean }) {
    const ticketId = `T-${randomUUID().slice(0, 8)}`;
    const scope = { principalId: 'alice', operation: 'support.reply', idempotencyKey: randomUUID() };
    const input = { ticketId, customerMessage: 'hi', channel: 'email' };
    const { job } = await admitJob(db.pool, { ...scope, input, schemaVersion: 1, requestDigest: requestDigest('support.reply', 1, input), workflowId: jobWorkflowId(scope) });
    const opened = await openAttempt(db.pool, { jobId: job.id, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('no attempt');
    await markAttemptRunning(db.pool, opened.attempt.id);
    const committed = await commitAndClaim(db.pool, opened.attempt, { reply, escalate: false }, { terminal: false, claim: { name: 'message.send', ...claim } });
    if (!committed.claimed) throw new Error('no claim');
    return { jobId: job.id, ticketId, input, output: { reply, escalate: false }, claimed: committed.claimed };
  }

  it('claims the first effect with the answer already in its first try only while its receipt lookup is verified', async () => {
    // Arrange: one downstream whose drills passed, one never verified, and an effect with no lookup at all.
    const unverified = await startSimDownstream({});
    const noLookup: EffectAdapter = { name: 'note.post', repeatSafe: false, perform: async () => ({ kind: 'done', receipt: {} }) };
    try {
      const runner = (adapter: EffectAdapter) => createEffectRunner({ db: db.pool, metrics: createMetrics(), adapters: new Map([[adapter.name, adapter]]), operations: createRegistry(), settings: { leaseMs: LEASE_MS, maxTries: 2, backoffMs: 20 } });

      // Act
      const answers = await Promise.all([runner(adapterFor(downstream)).claimsSending('message.send'), runner(createMessageSend({ baseUrl: unverified.url, deduplicates: false, timeoutMs: 300 })).claimsSending('message.send'), runner(noLookup).claimsSending('note.post')]);

      // Assert
      expect(answers).toEqual([true, false, false]);
    } finally {
      await unverified.close();
    }
  });

  it('performs a claim born in its first try once, as that try: one delivery, one try counted', async () => {
    // Arrange
    const { jobId, ticketId, input, output, claimed } = await jobWonWithClaim('Born sending.', { owner: 'worker-a', leaseMs: LEASE_MS, sending: true });
    expect(claimed).toMatchObject({ phase: 'sending', tries: 1 });

    // Act
    const state = await runnerFor(downstream).performClaimed(claimed, { owner: 'worker-a' }, { jobId, operation: 'support.reply', input, output });

    // Assert
    expect(state.status).toBe('succeeded');
    expect(deliveriesOf(downstream, ticketId)).toHaveLength(1);
    expect(await getEffect(db.pool, jobId, 'message.send')).toMatchObject({ status: 'succeeded', tries: 1, owners: 1 });
  });

  it('looks the receipt up first for a claim born in its first try whose owner vanished before sending, then sends it once', async () => {
    // Arrange: A won, claimed the effect already `sending` in the same commit, and vanished before its request went out.
    const { jobId, ticketId } = await jobWonWithClaim('Lost before the send.', { owner: 'worker-a', leaseMs: 50, sending: true });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const metrics = createMetrics();

    // Act: two recoverers race for it.
    const [b, c] = await Promise.all([runnerFor(downstream, metrics).recover(jobId, 'message.send', { owner: 'worker-b' }), runnerFor(downstream, metrics).recover(jobId, 'message.send', { owner: 'worker-c' })]);

    // Assert: the verified lookup said it never arrived, so the one send is its first; nothing was performed blindly.
    expect([b.status, c.status]).toContain('succeeded');
    expect(deliveriesOf(downstream, ticketId)).toHaveLength(1);
    const recovered = (await metrics.registry.getSingleMetric('onceflow_effects_recovered_total')!.get()).values.map((value) => value.labels.result);
    expect(recovered).toEqual(['not_received']);
  });

  it('performs again when the downstream proves nothing happened and deduplicates by key', async () => {
    // Arrange
    const { jobId, ticketId } = await jobWithWinner('Hello, deduplicated.');
    await claimEffect(db.pool, { jobId, name: 'message.send', owner: 'worker-a', leaseMs: 50 });
    await new Promise((resolve) => setTimeout(resolve, 100));

    // Act
    const recovered = await runnerFor(dedupingDownstream).recover(jobId, 'message.send', { owner: 'worker-b' });

    // Assert
    expect(recovered.status).toBe('succeeded');
    expect(deliveriesOf(dedupingDownstream, ticketId)).toHaveLength(1);
    expect(deliveriesOf(dedupingDownstream, ticketId)[0]!.idempotencyKey).toBe(effectKey(jobId, 'message.send'));
  });

  it('tries again, under its own claim, when the downstream turned the request away (429), then fails', async () => {
    // Arrange: the directive applies to every try, so it fails for good after the last one.
    const { jobId, ticketId } = await jobWithWinner('Sorry @sink(status=429)');

    // Act
    const state = await runnerFor(downstream).perform(jobId, 'message.send', { owner: 'worker-a' });

    // Assert
    expect(state).toMatchObject({ status: 'failed', error: { class: 'rate_limited', detail: expect.stringContaining('after 2 tries') } });
    expect(deliveriesOf(downstream, ticketId)).toHaveLength(0);
  });

  it('sends a message answered 503 (a proxy may answer so after the service acted) again only once its verified lookup says it never arrived', async () => {
    // Arrange
    const { jobId, ticketId } = await jobWithWinner('Sorry @sink(status=503)');
    const runner = runnerFor(downstream);

    // Act
    const first = await runner.perform(jobId, 'message.send', { owner: 'worker-a' });
    await waitForLease();
    const recovered = await runner.recover(jobId, 'message.send', { owner: 'worker-b' });

    // Assert
    expect(first.status).toBe('pending');
    expect(recovered).toMatchObject({ status: 'pending' });
    expect(await getEffect(db.pool, jobId, 'message.send')).toMatchObject({ tries: 2 });
    expect(deliveriesOf(downstream, ticketId)).toHaveLength(0);
  });

  it('fails an effect its downstream took none of the tries of, by its verified lookup: it did not happen, and it is not tried for ever', async () => {
    // Arrange: every try answered 500, none recorded
    const { jobId, ticketId } = await jobWithWinner('Down for good @sink(status=500)');
    const runner = runnerFor(downstream);
    let state = await runner.perform(jobId, 'message.send', { owner: 'worker-a' });

    // Act: recovery after each lease, at most a few times
    for (let round = 0; round < 4 && state.status === 'pending'; round++) {
      await waitForLease();
      state = await runner.recover(jobId, 'message.send', { owner: `worker-${round}` });
    }

    // Assert: two tries is the claim's (maxTries 2)
    expect(state).toMatchObject({ status: 'failed', error: { class: 'not_received', detail: expect.stringContaining('none of 2 tries') } });
    expect(deliveriesOf(downstream, ticketId)).toHaveLength(0);
  });

  it('fails at once when the downstream rejects the message (4xx)', async () => {
    const { jobId, ticketId } = await jobWithWinner('Bad @sink(status=422)');
    const state = await runnerFor(downstream).perform(jobId, 'message.send', { owner: 'worker-a' });
    expect(state).toMatchObject({ status: 'failed', error: { class: 'rejected' } });
    expect(deliveriesOf(downstream, ticketId)).toHaveLength(0);
  });

  it('claims nothing for a job without a winning output', async () => {
    // Arrange
    const scope = { principalId: 'alice', operation: 'support.reply', idempotencyKey: randomUUID() };
    const input = { ticketId: 'T-none', customerMessage: 'hi', channel: 'email' };
    const { job } = await admitJob(db.pool, { ...scope, input, schemaVersion: 1, requestDigest: requestDigest('support.reply', 1, input), workflowId: jobWorkflowId(scope) });

    // Act
    const claim = await claimEffect(db.pool, { jobId: job.id, name: 'message.send', owner: 'w', leaseMs: 1000 });

    // Assert
    expect(claim).toEqual({ claimed: false, effect: undefined });
  });
});

describe('cancellation and claims', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('lets exactly one of a cancellation and a claim raced at once win', async () => {
    for (let round = 0; round < 10; round++) {
      // Arrange: a job whose AI step has a winner.
      const scope = { principalId: 'alice', operation: 'support.reply', idempotencyKey: randomUUID() };
      const input = { ticketId: 'T-race', customerMessage: 'hi', channel: 'email' };
      const { job } = await admitJob(db.pool, { ...scope, input, schemaVersion: 1, requestDigest: requestDigest('support.reply', 1, input), workflowId: jobWorkflowId(scope) });
      const opened = await openAttempt(db.pool, { jobId: job.id, provider: 'p', model: 'm' });
      if (opened.kind !== 'opened') throw new Error('no attempt');
      await markAttemptRunning(db.pool, opened.attempt.id);
      await commitAttemptResult(db.pool, opened.attempt.id, { reply: 'x', escalate: false }, { terminal: false });

      // Act
      const [cancelled, claim] = await Promise.all([
        cancelJob(db.pool, job.id, { by: 'alice' }),
        claimEffect(db.pool, { jobId: job.id, name: 'message.send', owner: 'w', leaseMs: 1000 }),
      ]);

      // Assert: never both.
      expect([cancelled === 'cancelled', claim.claimed].filter(Boolean)).toHaveLength(1);
    }
  });
});

describe('a receipt lookup that keeps failing', () => {
  let db: TestDatabase;
  /** Where these tests' downstream is said to be: its dedupe drill passed there. */
  const verifiedAt = { declarationDigest: 'flaky-downstream', host: 'flaky.test' };
  beforeAll(async () => {
    db = await createTestDatabase();
    const drill = { passed: true, detail: 'the same receipt', keys: [], requests: [], receipts: [], ms: 1 };
    await recordEffectVerification(db.pool, { effect: 'message.send', ...verifiedAt, onceflowVersion: 'test', passed: true, drills: { send: drill, dedupe: drill } });
  });
  afterAll(() => db.drop());

  const LEASE_MS = 300;
  /** A send that timed out once (then answers as `then`), whose lookup always fails (a key rotated away, a lookup down for days). */
  function flaky(repeatSafe: boolean, then: PerformResult = { kind: 'done', receipt: { messageId: 'm-2' } }): EffectAdapter & { performs: number } {
    const adapter = {
      name: 'message.send',
      repeatSafe,
      performs: 0,
      async perform(): Promise<PerformResult> {
        adapter.performs++;
        return adapter.performs === 1 ? { kind: 'ambiguous', class: 'timeout', detail: 'no answer in time' } : then;
      },
      async lookup(): Promise<LookupResult> {
        throw new Error('receipt lookup answered 401');
      },
      verifiable: { ...verifiedAt, drillOrigin: 'http://flaky.test', probes: [], via: () => adapter as EffectAdapter },
    };
    return adapter;
  }

  /** Recovers after each lease until the effect leaves pending, or `rounds` times. */
  async function recoverUntilSettled(jobId: string, adapter: EffectAdapter, rounds: number) {
    const runner = createEffectRunner({ db: db.pool, metrics: createMetrics(), adapters: new Map([['message.send', adapter]]), operations: createRegistry(), settings: { leaseMs: LEASE_MS, maxTries: 2, backoffMs: 20, maxLookupFailures: 3 } });
    let state = await runner.perform(jobId, 'message.send', { owner: 'first' });
    for (let round = 0; round < rounds && state.status === 'pending'; round++) {
      await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 50));
      state = await runner.recover(jobId, 'message.send', { owner: `recovery-${round}` });
    }
    return state;
  }

  it('goes to review after its bound, when repeating is not safe (invariant 8)', async () => {
    // Arrange
    const { jobId } = await jobWithWinnerIn(db.pool, 'Lookup down');
    const adapter = flaky(false);

    // Act
    const state = await recoverUntilSettled(jobId, adapter, 6);

    // Assert
    expect(state.status).toBe('needs_review');
    expect(state.error).toMatchObject({ class: 'lookup_failing', detail: expect.stringMatching(/3 times.*401/) });
    expect(adapter.performs).toBe(1);
    expect(await getEffect(db.pool, jobId, 'message.send')).toMatchObject({ lookupFailures: 3 });
  });

  it('is repeated with the same key after its bound, when the downstream deduplicates', async () => {
    // Arrange
    const { jobId } = await jobWithWinnerIn(db.pool, 'Lookup down, dedupe on');
    const adapter = flaky(true);

    // Act
    const state = await recoverUntilSettled(jobId, adapter, 6);

    // Assert
    expect(state.status).toBe('succeeded');
    expect(state.receipt).toEqual({ messageId: 'm-2' });
    expect(adapter.performs).toBe(2);
  });

  it('goes to review, never failed, when that repeat is turned away: the first try may have acted', async () => {
    // Arrange: the repeat meets the same rotated key (401)
    const { jobId } = await jobWithWinnerIn(db.pool, 'Lookup down, repeat refused');
    const adapter = flaky(true, { kind: 'rejected', class: 'unauthorized', detail: 'downstream answered 401' });

    // Act
    const state = await recoverUntilSettled(jobId, adapter, 6);

    // Assert
    expect(state.status).toBe('needs_review');
    expect(state.error).toMatchObject({ class: 'repeat_rejected', detail: expect.stringContaining('401') });
    expect(adapter.performs).toBe(2);
  });
});

import { createHttpEffect } from '../../src/effects/http-effect';
import { createMessageSend } from '../../src/effects/message-send';
import { createEffectRunner } from '../../src/effects/runner';
import type { EffectAdapter } from '../../src/effects/types';
import { effectTrust } from '../../src/effects/verify/trust';
import { verifyEffects } from '../../src/effects/verify/verify-effects';
import { createMetrics } from '../../src/metrics/metrics';
import { createRegistry } from '../../src/operations/registry';
import { DownstreamLie } from '../../src/sim/downstream-lies';
import { startSimDownstream, type SimDownstream } from '../../src/sim/downstream-server';
import { createTestDatabase, type TestDatabase } from '../harness/database';
import { jobWithWinner } from '../harness/effect-jobs';

/**
 * Invariant 14, the repeat gate: recovery repeats a send that may have
 * happened only through a deduplication its drill verified, and settles from
 * a lookup (found, or not found) only when its drills did. Against a
 * downstream that lies about a claim, a send whose answer was lost goes to
 * review instead of becoming a second effect, or a lost one.
 */
describe('the repeat gate', () => {
  let db: TestDatabase;
  const started: SimDownstream[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(started.map((downstream) => downstream.close()));
    await db.drop();
  });

  async function downstreamThat(options: Parameters<typeof startSimDownstream>[0]): Promise<SimDownstream> {
    const downstream = await startSimDownstream(options);
    started.push(downstream);
    return downstream;
  }

  /** Verifies the effect as a start does (its drills against the liar fail), sends one message, loses its answer, and recovers it. */
  async function recoverAgainst(adapter: EffectAdapter, reply: string) {
    await verifyEffects(db.pool, new Map([[adapter.name, adapter]]));
    const runner = createEffectRunner({ db: db.pool, metrics: createMetrics(), adapters: new Map([[adapter.name, adapter]]), operations: createRegistry(), settings: { leaseMs: 30_000, maxTries: 2, backoffMs: 20 } });
    const job = await jobWithWinner(db.pool, reply);
    const first = await runner.perform(job.jobId, adapter.name, { owner: 'worker-a' });
    await db.pool.query(`UPDATE effects SET lease_expires_at = now() - interval '1 second' WHERE job_id = $1`, [job.jobId]);
    const recovered = await runner.recover(job.jobId, adapter.name, { owner: 'worker-b' });
    const { rows } = await db.pool.query<{ detail: Record<string, unknown> }>(`SELECT detail FROM job_events WHERE job_id = $1 AND type = 'effect.repeat_refused'`, [job.jobId]);
    return { ...job, first, recovered, refused: rows.map((row) => row.detail) };
  }

  it('refuses to repeat through a deduplication its drill found false: review, not a second message', async () => {
    // Arrange: it says it deduplicates, and records every repeat as a new message; no lookup
    const liar = await downstreamThat({ lie: DownstreamLie.dedupeRecordsTwice, dedupe: true });
    const effect = createHttpEffect(
      {
        name: 'ticket.message',
        url: `${liar.url}/v1/messages`,
        body: { ticketId: '{{input.ticketId}}', channel: '{{input.channel}}', text: '{{output.reply}}' },
        receipt: { messageId: '/messageId' },
        deduplicates: true,
        verify: { probes: [{ name: 'a message', input: { ticketId: 'V-1', channel: 'email' }, output: { reply: 'a drill' } }] },
      },
      {},
    );

    // Act: the message is recorded, its answer lost
    const { first, recovered, refused, ticketId } = await recoverAgainst(effect, 'Sent once. @sink(reset-once)');

    // Assert
    expect(first.status).toBe('pending');
    expect(recovered).toMatchObject({ status: 'needs_review', error: { class: 'unverified_claim' } });
    expect(refused).toEqual([expect.objectContaining({ name: 'ticket.message', claim: 'dedupe', detail: expect.stringMatching(/deduplication is not verified.*dedupe drill failed/) })]);
    expect(liar.deliveries().filter((delivery) => delivery.ticketId === ticketId)).toHaveLength(1);
  });

  it('refuses to send again on a "not found" from a lookup its drill found false: review, not a second message', async () => {
    // Arrange: the lookup never finds anything
    const liar = await downstreamThat({ lie: DownstreamLie.lookupNeverFound });

    // Act: the message is recorded, its answer lost
    const { recovered, refused, ticketId } = await recoverAgainst(createMessageSend({ baseUrl: liar.url, deduplicates: false, timeoutMs: 1_000 }), 'Sent once. @sink(reset)');

    // Assert
    expect(recovered).toMatchObject({ status: 'needs_review', error: { class: 'unverified_claim' } });
    expect(refused).toEqual([expect.objectContaining({ claim: 'lookup', detail: expect.stringMatching(/"not found" from a lookup that is not verified/) })]);
    expect(liar.deliveries().filter((delivery) => delivery.ticketId === ticketId)).toHaveLength(1);
  });

  it('refuses to settle from a "found" of a lookup its drill found false: review, not a lost message', async () => {
    // Arrange: the lookup finds anything; the message is answered 503 and never recorded
    const liar = await downstreamThat({ lie: DownstreamLie.lookupFoundForAnything });

    // Act
    const { recovered, refused, ticketId } = await recoverAgainst(createMessageSend({ baseUrl: liar.url, deduplicates: false, timeoutMs: 1_000 }), 'Never arrived. @sink(status=503)');

    // Assert: not succeeded with a made-up receipt; the operator sees what it claimed
    expect(recovered).toMatchObject({ status: 'needs_review', error: { class: 'unverified_claim', foundReceipt: expect.any(Object) } });
    expect(refused).toEqual([expect.objectContaining({ claim: 'lookup' })]);
    expect(liar.deliveries().filter((delivery) => delivery.ticketId === ticketId)).toHaveLength(0);
  });

  it('holds a verification only for the declaration and host it was made for', async () => {
    // Arrange: an honest downstream verified; then the same effect pointed at another host
    const honest = await downstreamThat({});
    const other = await downstreamThat({});
    const here = createMessageSend({ baseUrl: honest.url, deduplicates: false, timeoutMs: 1_000 });
    await verifyEffects(db.pool, new Map([[here.name, here]]));

    // Act
    const trusted = await effectTrust(db.pool, here, 3_600_000);
    const moved = await effectTrust(db.pool, createMessageSend({ baseUrl: other.url, deduplicates: false, timeoutMs: 1_000 }), 3_600_000);
    const stale = await effectTrust(db.pool, here, 3_600_000, Date.now() + 2 * 3_600_000);

    // Assert
    expect(trusted.lookup.current).toBe(true);
    expect(moved.lookup).toEqual({ current: false, why: expect.stringMatching(/another declaration|not/) });
    expect(stale.lookup).toEqual({ current: false, why: expect.stringMatching(/h ago; the limit is 1 h/) });
  });
  it('holds a verification of a declared effect only for the declaration it was made for, at the same host', async () => {
    // Arrange: a declared effect verified against an honest downstream; then its lookup moved to another path
    const honest = await downstreamThat({});
    const declared = (lookupPath: string) =>
      createHttpEffect(
        {
          name: 'ticket.note',
          url: `${honest.url}/v1/messages`,
          body: { ticketId: '{{input.ticketId}}', channel: 'email', text: '{{output.text}}' },
          receipt: { messageId: '/messageId' },
          lookup: { url: `${honest.url}${lookupPath}` },
          deduplicates: false,
          verify: { probes: [{ name: 'a note', input: { ticketId: 'V-1' }, output: { text: 'a drill' } }] },
        },
        {},
      );
    const before = declared('/v1/messages/by-key/{{key}}');
    await verifyEffects(db.pool, new Map([[before.name, before]]));

    // Act
    const trusted = await effectTrust(db.pool, before, 3_600_000);
    const changed = await effectTrust(db.pool, declared('/v1/messages/by-key/{{key}}?view=full'), 3_600_000);

    // Assert: the drills held for the first; the changed one is what a new verification must show
    expect(trusted.lookup.current).toBe(true);
    expect(changed.lookup).toEqual({ current: false, why: expect.stringMatching(/for another declaration/) });
  });
  it('holds a verification of a declared effect only for the host it was made against, when its file names the host through ${ENV}', async () => {
    // Arrange: one declaration, its host from the environment; verified against one downstream
    const honest = await downstreamThat({});
    const other = await downstreamThat({});
    const declaration = {
      name: 'ticket.note',
      url: '${NOTES_URL}/v1/messages',
      body: { ticketId: '{{input.ticketId}}', channel: 'email', text: '{{output.text}}' },
      receipt: { messageId: '/messageId' },
      lookup: { url: '${NOTES_URL}/v1/messages/by-key/{{key}}' },
      deduplicates: false,
      verify: { probes: [{ name: 'a note', input: { ticketId: 'V-1' }, output: { text: 'a drill' } }] },
    };
    const here = createHttpEffect(declaration, { NOTES_URL: honest.url });
    await verifyEffects(db.pool, new Map([[here.name, here]]));

    // Act: the same file, deployed where the variable names another host
    const moved = await effectTrust(db.pool, createHttpEffect(declaration, { NOTES_URL: other.url }), 3_600_000);

    // Assert
    expect(moved.lookup).toEqual({ current: false, why: `verified against ${new URL(honest.url).host}, not ${new URL(other.url).host}` });
  });
});

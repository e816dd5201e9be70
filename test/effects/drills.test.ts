import { createHttpEffect } from '../../src/effects/http-effect';
import { createMessageSend } from '../../src/effects/message-send';
import { runDrills } from '../../src/effects/verify/drills';
import { Drill } from '../../src/ledger/effect-verifications';
import { DownstreamLie } from '../../src/sim/downstream-lies';
import { startSimDownstream, type SimDownstream } from '../../src/sim/downstream-server';

/**
 * Invariant 14: an effect's claims are checked before recovery relies on
 * them. Each drill passes on the honest downstream and fails on the liar it
 * is made for (the simulated downstream's lies, docs/simulators.md).
 */
describe("an effect's drills", () => {
  const started: SimDownstream[] = [];
  afterAll(() => Promise.all(started.map((downstream) => downstream.close())));

  async function drillsAgainst(options: Parameters<typeof startSimDownstream>[0], deduplicates: boolean) {
    const downstream = await startSimDownstream(options);
    started.push(downstream);
    const verification = await runDrills(createMessageSend({ baseUrl: downstream.url, deduplicates, timeoutMs: 2_000 }));
    const outcome = Object.fromEntries(Object.entries(verification.drills).map(([drill, result]) => [drill, 'skipped' in result! ? 'skipped' : result!.passed ? 'pass' : 'FAIL']));
    return { verification, outcome, downstream };
  }

  it('pass against the honest downstream: a send, its lookup, a key never sent, a lost answer; dedupe is not claimed', async () => {
    // Act
    const { verification, outcome, downstream } = await drillsAgainst({}, false);

    // Assert
    expect(outcome).toEqual({ send: 'pass', lookup_found: 'pass', lookup_not_found: 'pass', disconnect: 'pass', dedupe: 'skipped', classification: 'skipped' });
    expect(verification).toMatchObject({ effect: 'message.send', passed: true, host: new URL(downstream.url).host });
    const keys = downstream.deliveries().map((delivery) => delivery.idempotencyKey);
    expect(keys).toHaveLength(2);
    expect(keys.every((key) => /^onceflow-verify-message\.send-[0-9a-f]{8}-K[13]$/.test(key))).toBe(true);
    const send = verification.drills[Drill.send] as { requests: Array<{ method: string; status?: number }>; receipts: unknown[] };
    expect(send.requests).toEqual([expect.objectContaining({ method: 'POST', status: 201 })]);
    expect(send.receipts).toEqual([{ messageId: downstream.deliveries()[0]!.messageId }]);
  });

  it('pass the dedupe drill against a downstream that deduplicates', async () => {
    // Act
    const { outcome, downstream } = await drillsAgainst({ dedupe: true }, true);

    // Assert
    expect(outcome).toMatchObject({ send: 'pass', dedupe: 'pass', lookup_found: 'pass', lookup_not_found: 'pass', disconnect: 'pass' });
    expect(downstream.deliveries().filter((delivery) => delivery.idempotencyKey.endsWith('-K1'))).toHaveLength(1);
  });

  it.each([
    [DownstreamLie.dedupeRecordsTwice, true, 'dedupe'],
    [DownstreamLie.lookupNeverFound, false, 'lookup_found'],
    [DownstreamLie.lookupFoundForAnything, false, 'lookup_not_found'],
    [DownstreamLie.lookupTransformedKey, false, 'lookup_found'],
    [DownstreamLie.lookupSlowToShow, false, 'lookup_found'],
  ])('fail against a downstream that lies (%s): its drill says so', async (lie, deduplicates, drill) => {
    // Act
    const { verification, outcome } = await drillsAgainst({ lie, dedupe: deduplicates }, deduplicates);

    // Assert
    expect(verification.passed).toBe(false);
    expect(outcome[drill]).toBe('FAIL');
    expect((verification.drills[drill as Drill] as { detail: string }).detail).not.toBe('');
  });

  it("classify a declared effect's malformed probe: refused with a 4xx, and not found", async () => {
    // Arrange: a declared effect to the messaging simulator, with a probe and a malformed probe
    const downstream = await startSimDownstream({});
    started.push(downstream);
    const effect = createHttpEffect(
      {
        name: 'ticket.message',
        url: `${downstream.url}/v1/messages`,
        body: { ticketId: '{{input.ticketId}}', channel: 'email', text: '{{output.text}}' },
        receipt: { messageId: '/messageId' },
        lookup: { url: `${downstream.url}/v1/messages/by-key/{{key}}` },
        deduplicates: false,
        verify: { probes: [{ name: 'a message', input: { ticketId: 'V-1' }, output: { text: 'a drill' } }], malformed: { input: { ticketId: 7 }, output: { text: 'no ticket' } } },
      },
      {},
    );

    // Act
    const verification = await runDrills(effect);

    // Assert
    expect(verification.passed).toBe(true);
    expect(verification.drills[Drill.classification]).toMatchObject({ passed: true });
  });
});

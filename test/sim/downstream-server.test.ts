import { startSimDownstream, type SimDownstream } from '../../src/sim/downstream-server';
import { connectionFailure, getJson, postMessage, sleep } from './sim-client';

describe('simulated downstream', () => {
  let downstream: SimDownstream;

  afterEach(async () => {
    await downstream.close();
  });

  describe('without deduplication (the default)', () => {
    beforeEach(async () => {
      downstream = await startSimDownstream({});
    });

    it('records a delivery and answers 201 with its messageId', async () => {
      // Act
      const response = await postMessage(downstream.url, { ticketId: 'T-1', text: 'We are on it.' }, 'eff-1');
      const body = await response.json();

      // Assert
      expect(response.status).toBe(201);
      expect(body.messageId).toMatch(/^msg_[0-9a-f]+$/);
      expect(downstream.deliveries()).toEqual([
        {
          messageId: body.messageId,
          idempotencyKey: 'eff-1',
          ticketId: 'T-1',
          channel: 'email',
          text: 'We are on it.',
          receivedAt: expect.any(String),
        },
      ]);
    });

    it('turns two sends with one key into two messages', async () => {
      // Act
      const first = await (await postMessage(downstream.url, { ticketId: 'T-1', text: 'Hi' }, 'eff-1')).json();
      const second = await postMessage(downstream.url, { ticketId: 'T-1', text: 'Hi' }, 'eff-1');
      const listed = await getJson(`${downstream.url}/v1/messages?ticketId=T-1`);

      // Assert
      expect(second.status).toBe(201);
      expect((await second.json()).messageId).not.toBe(first.messageId);
      expect(listed.body.messages).toHaveLength(2);
    });

    it('rejects a delivery without an Idempotency-Key with 400 and records nothing', async () => {
      // Act
      const response = await postMessage(downstream.url, { ticketId: 'T-1', text: 'Hi' }, undefined);

      // Assert
      expect(response.status).toBe(400);
      expect(downstream.deliveries()).toEqual([]);
    });

    it.each([
      ['not JSON', '{"ticketId":'],
      ['a missing text', JSON.stringify({ ticketId: 'T-1', channel: 'email' })],
      ['a numeric ticketId', JSON.stringify({ ticketId: 1, channel: 'email', text: 'Hi' })],
    ])('rejects a body with %s with 400 and records nothing', async (_label, body) => {
      // Act
      const response = await fetch(`${downstream.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'eff-1' },
        body,
      });

      // Assert
      expect(response.status).toBe(400);
      expect(downstream.deliveries()).toEqual([]);
    });

    it('lists the deliveries of one ticket, or all without a ticketId', async () => {
      // Arrange
      await postMessage(downstream.url, { ticketId: 'T-1', text: 'a' }, 'k1');
      await postMessage(downstream.url, { ticketId: 'T-2', text: 'b' }, 'k2');
      await postMessage(downstream.url, { ticketId: 'T-1', text: 'c' }, 'k3');

      // Act
      const one = await getJson(`${downstream.url}/v1/messages?ticketId=T-1`);
      const all = await getJson(`${downstream.url}/v1/messages`);

      // Assert
      expect(one.body.messages.map((m: any) => m.text)).toEqual(['a', 'c']);
      expect(all.body.messages.map((m: any) => m.text)).toEqual(['a', 'b', 'c']);
    });

    it('returns the receipt of the first delivery made with a key, and 404 for an unknown key', async () => {
      // Arrange
      const first = await (await postMessage(downstream.url, { ticketId: 'T-9', text: 'a' }, 'eff/9')).json();
      await postMessage(downstream.url, { ticketId: 'T-9', text: 'b' }, 'eff/9');

      // Act
      const found = await getJson(`${downstream.url}/v1/messages/by-key/${encodeURIComponent('eff/9')}`);
      const missing = await getJson(`${downstream.url}/v1/messages/by-key/never`);

      // Assert
      expect(found.status).toBe(200);
      expect(found.body).toEqual({
        messageId: first.messageId,
        idempotencyKey: 'eff/9',
        ticketId: 'T-9',
        receivedAt: first.receivedAt,
      });
      expect(missing.status).toBe(404);
    });
  });

  describe('@sink directives', () => {
    beforeEach(async () => {
      downstream = await startSimDownstream({});
    });

    it('reset records the message, then resets the connection without answering', async () => {
      // Act
      const code = await connectionFailure(
        postMessage(downstream.url, { ticketId: 'T-1', text: 'Hi @sink(reset)' }, 'eff-reset'),
      );
      const receipt = await getJson(`${downstream.url}/v1/messages/by-key/eff-reset`);

      // Assert
      expect(code).toBe('ECONNRESET');
      expect(downstream.deliveries()).toHaveLength(1);
      expect(receipt.status).toBe(200);
    });

    it.each([429, 500, 503])('status=%i answers that status and records nothing', async (status) => {
      // Act
      const response = await postMessage(
        downstream.url,
        { ticketId: 'T-1', text: `Hi @sink(status=${status})` },
        'eff-status',
      );

      // Assert
      expect(response.status).toBe(status);
      expect(downstream.deliveries()).toEqual([]);
    });

    it('delay records the message at once and answers after <ms>', async () => {
      // Act
      const started = performance.now();
      const pending = postMessage(downstream.url, { ticketId: 'T-1', text: 'Hi @sink(delay=150)' }, 'eff-delay');
      await sleep(50);
      const recordedEarly = downstream.deliveries().length;
      const response = await pending;

      // Assert
      expect(recordedEarly).toBe(1);
      expect(response.status).toBe(201);
      expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    });

    it('reset-once resets the first delivery of a key and answers the next one normally', async () => {
      // Arrange
      const message = { ticketId: 'T-1', text: 'Hi @sink(reset-once)' };

      // Act
      const firstCode = await connectionFailure(postMessage(downstream.url, message, 'eff-once'));
      const retry = await postMessage(downstream.url, message, 'eff-once');
      const otherKeyCode = await connectionFailure(postMessage(downstream.url, message, 'eff-other'));

      // Assert
      expect(firstCode).toBe('ECONNRESET');
      expect(retry.status).toBe(201);
      expect(otherKeyCode).toBe('ECONNRESET');
      expect(downstream.deliveries().map((d) => d.idempotencyKey)).toEqual(['eff-once', 'eff-once', 'eff-other']);
    });
  });

  describe('with deduplication', () => {
    beforeEach(async () => {
      downstream = await startSimDownstream({ dedupe: true });
    });

    it('answers a repeated key with 200 and the first receipt, recording nothing new', async () => {
      // Arrange
      const first = await postMessage(downstream.url, { ticketId: 'T-1', text: 'Hi' }, 'eff-1');
      const firstReceipt = await first.json();

      // Act
      const second = await postMessage(downstream.url, { ticketId: 'T-1', text: 'Hi' }, 'eff-1');

      // Assert
      expect(first.status).toBe(201);
      expect(second.status).toBe(200);
      expect(await second.json()).toEqual(firstReceipt);
      expect(downstream.deliveries()).toHaveLength(1);
    });

    it('still records deliveries with different keys separately', async () => {
      // Act
      await postMessage(downstream.url, { ticketId: 'T-1', text: 'Hi' }, 'eff-1');
      await postMessage(downstream.url, { ticketId: 'T-1', text: 'Hi' }, 'eff-2');

      // Assert
      expect(downstream.deliveries()).toHaveLength(2);
    });

    it('answers the retry of a reset-once delivery with the receipt of the delivery that was reset', async () => {
      // Arrange
      const message = { ticketId: 'T-1', text: 'Hi @sink(reset-once)' };
      await connectionFailure(postMessage(downstream.url, message, 'eff-once'));

      // Act
      const retry = await postMessage(downstream.url, message, 'eff-once');

      // Assert
      expect(retry.status).toBe(200);
      expect((await retry.json()).messageId).toBe(downstream.deliveries()[0]?.messageId);
      expect(downstream.deliveries()).toHaveLength(1);
    });
  });
});

/**
 * The liars: each mode breaks one claim a downstream makes, the way real ones
 * do, so the drills that check those claims can be shown to catch it. What
 * each test asserts is the lie as it looks from outside; `deliveries()` stays
 * the truth.
 */
describe('simulated downstream that lies', () => {
  let downstream: SimDownstream;
  /** A drill-like key: longer than 24 characters, with capitals. */
  const K1 = 'onceflow-verify-ticket.comment-1a2b3c4d-K1';
  const K2 = 'onceflow-verify-ticket.comment-1a2b3c4d-K2';
  const K3 = 'onceflow-verify-ticket.comment-1a2b3c4d-K3';
  const lookUp = (key: string) => getJson(`${downstream.url}/v1/messages/by-key/${encodeURIComponent(key)}`);
  const send = async (key: string, text = 'Hi') => {
    const response = await postMessage(downstream.url, { ticketId: 'T-1', text }, key);
    return { status: response.status, body: await response.json() };
  };

  afterEach(async () => {
    await downstream.close();
  });

  describe.each([false, true])('dedupe-records-twice (dedupe: %s changes nothing)', (dedupe) => {
    beforeEach(async () => {
      downstream = await startSimDownstream({ lie: 'dedupe-records-twice', dedupe });
    });

    it('answers a repeated key 200 as if deduplicated, yet records a second message and returns its new messageId', async () => {
      // Arrange
      const first = await send(K1);

      // Act
      const again = await send(K1);
      const found = await lookUp(K1);

      // Assert
      expect(first.status).toBe(201);
      expect(again.status).toBe(200);
      expect(again.body.messageId).toMatch(/^msg_[0-9a-f]{16}$/);
      expect(again.body.messageId).not.toBe(first.body.messageId);
      expect(downstream.deliveries().map((d) => [d.idempotencyKey, d.messageId])).toEqual([
        [K1, first.body.messageId],
        [K1, again.body.messageId],
      ]);
      expect(found).toEqual({ status: 200, body: first.body });
    });
  });

  describe.each([false, true])('lookup-never-found (dedupe: %s)', (dedupe) => {
    beforeEach(async () => {
      downstream = await startSimDownstream({ lie: 'lookup-never-found', dedupe });
    });

    it('records and answers a delivery as usual, but its lookup answers 404', async () => {
      // Act
      const sent = await send(K1);
      const again = await send(K1);
      const found = await lookUp(K1);

      // Assert
      expect(sent.status).toBe(201);
      expect(again.status).toBe(dedupe ? 200 : 201);
      expect(downstream.deliveries()).toHaveLength(dedupe ? 1 : 2);
      expect(found.status).toBe(404);
    });
  });

  describe('lookup-found-for-anything', () => {
    beforeEach(async () => {
      downstream = await startSimDownstream({ lie: 'lookup-found-for-anything' });
    });

    it('answers 200 with a made-up receipt for a key never sent, the same one each time, recording nothing', async () => {
      // Act
      const made = await lookUp(K2);
      const madeAgain = await lookUp(K2);
      const other = await lookUp(K3);

      // Assert
      expect(made.status).toBe(200);
      expect(made.body).toEqual({ messageId: expect.stringMatching(/^msg_[0-9a-f]{16}$/), idempotencyKey: K2, ticketId: expect.any(String), receivedAt: expect.any(String) });
      expect(madeAgain.body).toEqual(made.body);
      expect(other.body.messageId).not.toBe(made.body.messageId);
      expect(downstream.deliveries()).toEqual([]);
    });

    it('still answers the true receipt for a key it did receive', async () => {
      // Arrange
      const sent = await send(K1);

      // Act
      const found = await lookUp(K1);

      // Assert
      expect(found).toEqual({ status: 200, body: sent.body });
    });
  });

  describe('lookup-transformed-key (stores the first 24 characters, looks up the key as given)', () => {
    it('does not find a key longer than 24 characters that it did receive', async () => {
      // Arrange
      downstream = await startSimDownstream({ lie: 'lookup-transformed-key' });
      const sent = await send(K1);

      // Act
      const found = await lookUp(K1);

      // Assert
      expect(sent.status).toBe(201);
      expect(sent.body.idempotencyKey).toBe(K1.slice(0, 24));
      expect(downstream.deliveries().map((d) => d.idempotencyKey)).toEqual(['onceflow-verify-ticket.c']);
      expect(found.status).toBe(404);
    });

    it('finds, under the stored prefix, a key that was never sent; a key of at most 24 characters is found as usual', async () => {
      // Arrange
      downstream = await startSimDownstream({ lie: 'lookup-transformed-key' });
      const sent = await send(K1);
      const short = await send('eff-short-Key');

      // Act
      const byPrefix = await lookUp(K1.slice(0, 24));
      const byShort = await lookUp('eff-short-Key');

      // Assert
      expect(byPrefix).toEqual({ status: 200, body: sent.body });
      expect(byShort).toEqual({ status: 200, body: short.body });
    });

    it('with dedupe, answers a different key of the same first 24 characters with the first receipt, recording nothing', async () => {
      // Arrange
      downstream = await startSimDownstream({ lie: 'lookup-transformed-key', dedupe: true });
      const first = await send(K1);

      // Act
      const other = await send(K3);

      // Assert
      expect(other).toEqual({ status: 200, body: first.body });
      expect(downstream.deliveries()).toHaveLength(1);
    });
  });

  describe('lookup-slow-to-show', () => {
    let nowMs: number;
    const now = () => nowMs;

    beforeEach(() => {
      nowMs = Date.parse('2030-01-01T00:00:00Z');
    });

    it('shows a delivery to the lookup only 3000 ms after it was recorded, by default', async () => {
      // Arrange
      downstream = await startSimDownstream({ lie: 'lookup-slow-to-show', now });
      const sent = await send(K1);

      // Act
      const atOnce = await lookUp(K1);
      nowMs += 2_999;
      const justBefore = await lookUp(K1);
      nowMs += 1;
      const after = await lookUp(K1);

      // Assert
      expect(sent.status).toBe(201);
      expect(downstream.deliveries()).toHaveLength(1);
      expect((await getJson(`${downstream.url}/v1/messages?ticketId=T-1`)).body.messages).toHaveLength(1);
      expect([atOnce.status, justBefore.status]).toEqual([404, 404]);
      expect(after).toEqual({ status: 200, body: sent.body });
    });

    it('takes its lag from lookupLagMs', async () => {
      // Arrange
      downstream = await startSimDownstream({ lie: 'lookup-slow-to-show', lookupLagMs: 250, now });
      await send(K1);

      // Act
      nowMs += 249;
      const justBefore = await lookUp(K1);
      nowMs += 1;
      const after = await lookUp(K1);

      // Assert
      expect([justBefore.status, after.status]).toEqual([404, 200]);
    });

    it('with dedupe, answers a repeat with the first receipt before the lookup shows it', async () => {
      // Arrange
      downstream = await startSimDownstream({ lie: 'lookup-slow-to-show', dedupe: true, now });
      const first = await send(K1);

      // Act
      const again = await send(K1);
      const found = await lookUp(K1);

      // Assert
      expect(again).toEqual({ status: 200, body: first.body });
      expect(found.status).toBe(404);
    });

    it('stamps receivedAt with the injected clock', async () => {
      // Arrange
      downstream = await startSimDownstream({ lie: 'lookup-slow-to-show', now });

      // Act
      const sent = await send(K1);

      // Assert
      expect(sent.body.receivedAt).toBe('2030-01-01T00:00:00.000Z');
    });
  });
});

describe('simulated downstream options', () => {
  it.each([
    [{ lie: 'lookup-sometimes' as never }, TypeError, 'lookup-sometimes'],
    [{ lie: 'lookup-slow-to-show' as const, lookupLagMs: -1 }, RangeError, 'lookupLagMs'],
    [{ lie: 'lookup-slow-to-show' as const, lookupLagMs: 1.5 }, RangeError, 'lookupLagMs'],
  ])('refuses to start with %o', async (options, type, named) => {
    // Act
    const failure = await startSimDownstream(options).catch((error: unknown) => error);

    // Assert
    expect(failure).toBeInstanceOf(type);
    expect((failure as Error).message).toContain(named);
  });
});

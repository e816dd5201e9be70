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

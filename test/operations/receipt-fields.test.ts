import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pool, PoolClient } from 'pg';
import { createHttpEffect } from '../../src/effects/http-effect';
import { createMessageSend } from '../../src/effects/message-send';
import { createRecordWrite } from '../../src/effects/record-write';
import type { EffectContext } from '../../src/effects/types';
import { createWebhook } from '../../src/effects/webhook';
import { BUILT_IN_RECEIPT_FIELDS, declaredReceiptFields } from '../../src/operations/receipt-fields';

const CONTEXT: EffectContext = { jobId: 'j-1', operation: 'support.reply', input: { ticketId: 'T-1', channel: 'email' }, output: { reply: 'Hello.' }, key: 'k-1' };

/** A downstream that answers every request with `body` (JSON) and 201. */
function downstream(body: unknown): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(body)));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })));
}

const keysOf = (receipt: unknown): string[] => Object.keys(receipt as object).sort();

/**
 * The receipt fields `onceflow check` holds an operation's result.fields to
 * are those the adapters settle with: a field they never return would be
 * missing from every result.
 */
describe('the receipt fields the check knows', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it('are those message.send returns', async () => {
    // Arrange
    const started = await downstream({ messageId: 'm-1', channel: 'email' });
    server = started.server;

    // Act
    const result = await createMessageSend({ baseUrl: started.url, deduplicates: false, timeoutMs: 5_000 }).perform!(CONTEXT);

    // Assert
    expect(result.kind).toBe('done');
    expect(keysOf((result as { receipt: unknown }).receipt)).toEqual([...BUILT_IN_RECEIPT_FIELDS['message.send']].sort());
  });

  it('are those webhook.notify returns', async () => {
    // Arrange
    const started = await downstream({});
    server = started.server;

    // Act
    const result = await createWebhook({ name: 'webhook.notify', url: started.url, receiverDeduplicates: false, timeoutMs: 5_000 }).perform!(CONTEXT);

    // Assert
    expect(keysOf((result as { receipt: unknown }).receipt)).toEqual([...BUILT_IN_RECEIPT_FIELDS['webhook.notify']].sort());
  });

  it('are those record.write returns, written and looked up', async () => {
    // Arrange: the row a database would return.
    const row = { rows: [{ written_at: new Date('2026-01-01T00:00:00Z') }] };
    const db = { query: async () => row } as unknown as Pool;
    const adapter = createRecordWrite(db);

    // Act
    const written = await adapter.performInTransaction!({ query: async () => row } as unknown as PoolClient, CONTEXT);
    const found = await adapter.lookup!('k-1', CONTEXT);

    // Assert
    expect(keysOf(written)).toEqual([...BUILT_IN_RECEIPT_FIELDS['record.write']].sort());
    expect(keysOf((found as { receipt: unknown }).receipt)).toEqual([...BUILT_IN_RECEIPT_FIELDS['record.write']].sort());
  });

  it.each([
    ['its receipt: names', { receipt: { commentId: '/id', state: '/state' } }],
    ['the status, without receipt:', {}],
  ])('of a declared effect are %s', async (_label, declared) => {
    // Arrange
    const started = await downstream({ id: 'c-1', state: 'open', other: 1 });
    server = started.server;
    const declaration = { name: 'ticket.comment', url: `${started.url}/comments`, deduplicates: false, ...declared };

    // Act
    const result = await createHttpEffect(declaration, {}).perform!(CONTEXT);

    // Assert
    expect(keysOf((result as { receipt: unknown }).receipt)).toEqual(declaredReceiptFields(declaration).sort());
  });

  it('of a declared effect with a lookup are those both its receipts have', () => {
    expect(declaredReceiptFields({ receipt: { commentId: '/id', url: '/url' }, lookup: { url: 'https://x.example/{{key}}', receipt: { commentId: '/0/id' } } })).toEqual(['commentId']);
    expect(declaredReceiptFields({ receipt: { commentId: '/id' }, lookup: { url: 'https://x.example/{{key}}' } })).toEqual(['commentId']);
  });
});

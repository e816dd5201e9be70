import { startGatewayDownstream, type GatewayDownstream } from '../../chaos/gateway/downstream';

describe("the gateway round's recording downstream", () => {
  let downstream: GatewayDownstream;
  beforeEach(async () => {
    downstream = await startGatewayDownstream();
  });
  afterEach(() => downstream.close());

  const send = (ticketId: string, key: string, text = 'sim-primary: an answer') =>
    fetch(`${downstream.url}/v1/tickets/${encodeURIComponent(ticketId)}/comments`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/json', 'idempotency-key': key, authorization: 'Bearer s3cret' },
      body: JSON.stringify({ ticketId, text }),
    });
  const lookup = (key: string) => fetch(`${downstream.url}/v1/comments/by-key/${encodeURIComponent(key)}`, { signal: AbortSignal.timeout(1_000) });

  it('stores a comment, finds it by key, and records both requests with their headers', async () => {
    // Act
    const sent = await send('T-1', 'k-1');
    const found = await lookup('k-1');

    // Assert
    expect(sent.status).toBe(201);
    expect(found.status).toBe(200);
    expect(((await found.json()) as { ticketId: string }).ticketId).toBe('T-1');
    const [first, second] = downstream.requests();
    expect(first).toMatchObject({ server: 'declared', method: 'POST', kind: 'send', key: 'k-1', ticketId: 'T-1', host: downstream.host, answer: '201' });
    expect(first!.headers.authorization).toBe('Bearer s3cret');
    expect(second).toMatchObject({ kind: 'lookup', answer: '200' });
  });

  it('redirects to the other origin, which records what reaches it; an unacted redirect leaves nothing to look up', async () => {
    // Arrange
    downstream.plan('T-2', { send: { kind: 'redirect', code: 307, acted: false } });

    // Act
    const sent = await send('T-2', 'k-2');
    const followed = await fetch(sent.headers.get('location')!, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });

    // Assert
    expect(sent.status).toBe(307);
    expect(sent.headers.get('location')).toBe(`${downstream.elsewhereUrl}/v1/tickets/T-2/comments`);
    expect(followed.status).toBe(200);
    expect((await lookup('k-2')).status).toBe(404);
    expect(downstream.requests().map((r) => r.server)).toEqual(['declared', 'elsewhere', 'declared']);
  });

  it('resets after storing, applies a fault only to the provider it names, and fails its lookup for a while', async () => {
    // Arrange
    downstream.plan('T-3', { send: { kind: 'reset', acted: true }, onlyFrom: 'sim-backup', lookup: { kind: 401, forMs: 300 } });
    downstream.plan('T-4', { send: { kind: 'reset', acted: true }, onlyFrom: 'sim-backup' });

    // Act
    const reset = await send('T-3', 'k-3', 'sim-backup: an answer').then(() => 'answered', () => 'reset');
    const early = await lookup('k-3');
    await new Promise((resolve) => setTimeout(resolve, 350));
    const later = await lookup('k-3');
    const other = await send('T-4', 'k-4', 'sim-primary: an answer');

    // Assert
    expect(reset).toBe('reset');
    expect(early.status).toBe(401);
    expect(later.status).toBe(200);
    expect(other.status).toBe(201);
  });
});

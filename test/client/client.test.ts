import { OnceflowApiError, OnceflowClient, OnceflowUnavailableError } from '../../src/client';
import { KEYS, startTestStack, type TestStack } from '../harness/stack';

describe('the typed client', () => {
  let stack: TestStack;
  let baseUrl: string;
  beforeAll(async () => {
    stack = await startTestStack();
    baseUrl = await stack.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => stack.close());

  const input = { ticketId: 'T-55', customerMessage: 'Refund please', channel: 'email' };
  const noSleep = async () => undefined;

  it('retries a submit whose response was lost with the same key, and gets the one job back', async () => {
    // Arrange: the first response is lost after the server has acted on it.
    const sent: Array<string | null> = [];
    let calls = 0;
    const flakyFetch: typeof fetch = async (url, init) => {
      sent.push(new Headers(init?.headers).get('idempotency-key'));
      const response = await fetch(url, init);
      if (calls++ === 0) throw new TypeError('fetch failed: socket hang up');
      return response;
    };
    const client = new OnceflowClient({ baseUrl, apiKey: KEYS.alice, fetch: flakyFetch, sleep: noSleep });

    // Act
    const submitted = await client.submit('support.reply', input);

    // Assert
    expect(sent).toHaveLength(2);
    expect(sent[0]).toBe(sent[1]);
    expect(submitted.replayed).toBe(true);
    const rows = await stack.db.pool.query('SELECT id FROM jobs WHERE idempotency_key = $1', [submitted.idempotencyKey]);
    expect(rows.rows.map((r) => r.id)).toEqual([submitted.job.id]);
  });

  it('retries 5xx answers with the same key and gives up with the last failure', async () => {
    // Arrange
    const keys: Array<string | null> = [];
    const failing: typeof fetch = async (_url, init) => {
      keys.push(new Headers(init?.headers).get('idempotency-key'));
      return new Response(JSON.stringify({ type: 'x', title: 'Unavailable', status: 503, detail: 'down' }), { status: 503 });
    };
    const client = new OnceflowClient({ baseUrl, apiKey: KEYS.alice, fetch: failing, sleep: noSleep, maxRetries: 2 });

    // Act
    const result = client.submit('support.reply', input, { idempotencyKey: 'fixed-key' });

    // Assert
    await expect(result).rejects.toBeInstanceOf(OnceflowUnavailableError);
    expect(keys).toEqual(['fixed-key', 'fixed-key', 'fixed-key']);
  });

  it('sends the schema version it is given, and none when it is not', async () => {
    // Arrange
    const bodies: unknown[] = [];
    const recording: typeof fetch = async (url, init) => {
      bodies.push(JSON.parse(String(init?.body)));
      return fetch(url, init);
    };
    const client = new OnceflowClient({ baseUrl, apiKey: KEYS.alice, fetch: recording, sleep: noSleep });

    // Act
    const named = await client.submit('support.reply', input, { schemaVersion: 1 });
    await client.submit('support.reply', input);

    // Assert
    expect(named.job.schemaVersion).toBe(1);
    expect(bodies).toEqual([{ operation: 'support.reply', schemaVersion: 1, input }, { operation: 'support.reply', input }]);
  });

  it('does not retry a 409: the key was used for another intent', async () => {
    // Arrange
    const client = new OnceflowClient({ baseUrl, apiKey: KEYS.alice, sleep: noSleep });
    const first = await client.submit('support.reply', input);

    // Act
    const reuse = client.submit('support.reply', { ...input, customerMessage: 'other' }, { idempotencyKey: first.idempotencyKey });

    // Assert
    await expect(reuse).rejects.toMatchObject({ name: 'OnceflowApiError', status: 409 });
    await expect(reuse).rejects.toBeInstanceOf(OnceflowApiError);
  });

  it('does not retry a 501: the server will never take the request', async () => {
    // Arrange
    let calls = 0;
    const failing: typeof fetch = async () => {
      calls++;
      return new Response(JSON.stringify({ type: 'x', title: 'Not implemented', status: 501, detail: 'never' }), { status: 501 });
    };
    const client = new OnceflowClient({ baseUrl, apiKey: KEYS.alice, fetch: failing, sleep: noSleep });

    // Act
    const result = client.submit('support.reply', input);

    // Assert
    await expect(result).rejects.toMatchObject({ name: 'OnceflowApiError', status: 501 });
    expect(calls).toBe(1);
  });

  it.each([408, 429, 500, 502, 503, 504])('retries a %i with the same key', async (status) => {
    // Arrange
    const keys: Array<string | null> = [];
    const flaky: typeof fetch = async (url, init) => {
      keys.push(new Headers(init?.headers).get('idempotency-key'));
      if (keys.length === 1) return new Response(JSON.stringify({ type: 'x', title: 'x', status, detail: 'x' }), { status });
      return fetch(url, init);
    };
    const client = new OnceflowClient({ baseUrl, apiKey: KEYS.alice, fetch: flaky, sleep: noSleep });

    // Act
    const submitted = await client.submit('support.reply', input);

    // Assert
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(submitted.job.idempotencyKey).toBe(keys[0]);
  });

  it('does not retry bytes the server refuses: NUL in the input is a 400 at the first try', async () => {
    // Arrange
    let calls = 0;
    const counting: typeof fetch = async (url, init) => {
      calls++;
      return fetch(url, init);
    };
    const client = new OnceflowClient({ baseUrl, apiKey: KEYS.alice, fetch: counting, sleep: noSleep });

    // Act
    const result = client.submit('support.reply', { ...input, customerMessage: 'a\u0000b' });

    // Assert
    await expect(result).rejects.toMatchObject({ name: 'OnceflowApiError', status: 400, problem: { errors: [{ pointer: '/input/customerMessage' }] } });
    expect(calls).toBe(1);
  });

  it('waits for the result', async () => {
    const client = new OnceflowClient({ baseUrl, apiKey: KEYS.alice });
    const { job } = await client.submit('support.reply', input);
    const done = await client.waitForResult(job.id, { timeoutMs: 20_000, pollMs: 100 });
    expect(done.status).toBe('succeeded');
    expect((await client.findJob('support.reply', job.idempotencyKey)).id).toBe(job.id);
  });
});

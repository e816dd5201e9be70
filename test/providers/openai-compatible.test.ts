import { createOpenAiCompatibleProvider } from '../../src/providers/openai-compatible';
import type { LookupResult, ProviderAdapter } from '../../src/providers/types';
import { startSimProvider, type SimProvider } from '../../src/sim/provider-server';
import {
  closedPort,
  completionRequest,
  failureOf,
  sendJson,
  sleep,
  startFakeServer,
  type FakeServer,
} from './fake-http';

/** Polls the lookup until it reports `completed` or `withinMs` passes. */
async function lookupUntilCompleted(provider: ProviderAdapter, requestId: string, withinMs: number): Promise<LookupResult> {
  const until = Date.now() + withinMs;
  for (;;) {
    const result = await provider.lookup!(requestId);
    if ((result.found && result.status === 'completed') || Date.now() > until) return result;
    await sleep(50);
  }
}

describe('openai-compatible adapter against the simulated provider', () => {
  let sim: SimProvider;
  let provider: ProviderAdapter;

  beforeEach(async () => {
    sim = await startSimProvider({ name: 'sim-primary' });
    provider = createOpenAiCompatibleProvider({ name: 'sim-primary', baseUrl: sim.url, lookup: true });
  });

  afterEach(async () => {
    await sim.close();
  });

  it("returns the assistant's content and the raw body of a normal answer", async () => {
    // Arrange
    const request = completionRequest('Where is my parcel?');

    // Act
    const answer = await provider.complete(request);

    // Assert
    const output = JSON.parse(answer.content);
    expect(output.reply).toMatch(/^sim-primary: /);
    expect(output.escalate).toBe(false);
    expect((answer.raw as any).choices[0].message.content).toBe(answer.content);
    expect(sim.requests()).toMatchObject([
      { requestId: request.requestId, model: 'sim-small', messages: [{ role: 'user', content: 'Where is my parcel?' }] },
    ]);
  });

  it("sends the attempt's id as the Idempotency-Key the provider records", async () => {
    // Arrange
    const request = completionRequest('Hello');

    // Act
    await provider.complete(request);

    // Assert
    expect(sim.requests().map((r) => r.requestId)).toEqual([request.requestId]);
  });

  it('classifies 429 as failed rate_limited with the retry-after in milliseconds', async () => {
    // Act
    const failure = await failureOf(provider.complete(completionRequest('@sim(*:status=429)')));

    // Assert
    expect(failure).toMatchObject({ outcome: 'failed', class: 'rate_limited', httpStatus: 429, retryAfterMs: 1000 });
    expect(failure.detail).toContain('sim-primary');
  });

  it('classifies 400 as failed bad_request', async () => {
    // Act
    const failure = await failureOf(provider.complete(completionRequest('@sim(*:status=400)')));

    // Assert
    expect(failure).toMatchObject({ outcome: 'failed', class: 'bad_request', httpStatus: 400 });
  });

  it.each([
    [500, 'server_error'],
    [502, 'bad_gateway'],
    [503, 'bad_gateway'],
    [504, 'bad_gateway'],
  ])('classifies %i as unknown (%s): the provider may have executed', async (status, expectedClass) => {
    // Act
    const failure = await failureOf(provider.complete(completionRequest(`@sim(*:status=${status})`)));

    // Assert
    expect(failure).toEqual(expect.objectContaining({ outcome: 'unknown', class: expectedClass, httpStatus: status }));
  });

  it('gives up a hanging call as unknown timeout, promptly after timeoutMs', async () => {
    // Arrange
    const request = completionRequest('@sim(*:hang)', { timeoutMs: 300 });
    const started = Date.now();

    // Act
    const failure = await failureOf(provider.complete(request));

    // Assert
    const elapsedMs = Date.now() - started;
    expect(failure).toMatchObject({ outcome: 'unknown', class: 'timeout' });
    expect(elapsedMs).toBeGreaterThanOrEqual(250);
    expect(elapsedMs).toBeLessThan(1_500);
    expect(await provider.lookup!(request.requestId)).toEqual({ found: true, status: 'executing' });
  });

  it('classifies a reset after the provider executed as unknown connection_lost, and does not retry it', async () => {
    // Arrange
    const request = completionRequest('@sim(*:reset)');

    // Act
    const failure = await failureOf(provider.complete(request));

    // Assert
    expect(failure).toMatchObject({ outcome: 'unknown', class: 'connection_lost' });
    expect(sim.requests()).toHaveLength(1);
    expect(await provider.lookup!(request.requestId)).toMatchObject({ found: true, status: 'completed' });
  });

  it('classifies a connection closed after sending as unknown connection_lost; the lookup then shows nothing ran', async () => {
    // Arrange: `refuse` reads the request, then closes. From the client this looks like a reset.
    const request = completionRequest('@sim(*:refuse)');

    // Act
    const failure = await failureOf(provider.complete(request));
    const lookup = await provider.lookup!(request.requestId);

    // Assert
    expect(failure).toMatchObject({ outcome: 'unknown', class: 'connection_lost' });
    expect(lookup).toEqual({ found: false });
  });

  it('classifies a refused connection (closed port) as failed refused', async () => {
    // Arrange
    const port = await closedPort();
    const down = createOpenAiCompatibleProvider({ name: 'down', baseUrl: `http://127.0.0.1:${port}/v1` });

    // Act
    const failure = await failureOf(down.complete(completionRequest('Hello')));

    // Assert
    expect(failure).toMatchObject({ outcome: 'failed', class: 'refused' });
    expect(failure.detail).toContain('ECONNREFUSED');
  });

  it('reconciles a late answer through lookup: executing, then completed with the content', async () => {
    // Arrange
    const request = completionRequest('Late one @sim(*:late=600)', { timeoutMs: 150 });
    const failure = await failureOf(provider.complete(request));

    // Act
    const during = await provider.lookup!(request.requestId);
    const after = await lookupUntilCompleted(provider, request.requestId, 3_000);

    // Assert
    expect(failure).toMatchObject({ outcome: 'unknown', class: 'timeout' });
    expect(during).toEqual({ found: true, status: 'executing' });
    expect(after).toMatchObject({ found: true, status: 'completed' });
    const completed = after as Extract<LookupResult, { status: 'completed' }>;
    expect(JSON.parse(completed.content).reply).toMatch(/^sim-primary: /);
    expect((completed.raw as any).choices[0].message.content).toBe(completed.content);
  });

  it('answers found:false for a request id the provider never received', async () => {
    // Act
    const result = await provider.lookup!('att-never-sent');

    // Assert
    expect(result).toEqual({ found: false });
  });

  it('throws when the lookup itself cannot reach the provider', async () => {
    // Arrange
    const port = await closedPort();
    const down = createOpenAiCompatibleProvider({ name: 'down', baseUrl: `http://127.0.0.1:${port}/v1`, lookup: true });

    // Act / Assert
    await expect(down.lookup!('att-1')).rejects.toThrow(/lookup of att-1 at down failed/);
  });

  it('offers no lookup unless configured to', () => {
    // Act
    const plain = createOpenAiCompatibleProvider({ name: 'plain', baseUrl: sim.url });

    // Assert
    expect(plain.lookup).toBeUndefined();
    expect(plain.kind).toBe('openai-compatible');
  });
});

describe('openai-compatible adapter against a scripted server', () => {
  let server: FakeServer | undefined;

  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const completion = (content: unknown): unknown => ({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 0,
    model: 'm',
    choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }],
  });

  it('sends Idempotency-Key and X-Request-Id equal to the requestId, and the messages as given', async () => {
    // Arrange
    server = await startFakeServer((_request, res) => sendJson(res, 200, completion('hi')));
    const provider = createOpenAiCompatibleProvider({
      name: 'scripted',
      baseUrl: `${server.url}/v1`,
      defaultHeaders: { 'X-Tenant': 'acme', 'Idempotency-Key': 'must-be-overridden' },
    });
    const request = completionRequest('Hello', {
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello' },
      ],
      temperature: 0,
      maxTokens: 50,
    });

    // Act
    await provider.complete(request);

    // Assert
    const [recorded, ...others] = server.requests;
    expect(others).toEqual([]);
    expect(recorded?.method).toBe('POST');
    expect(recorded?.url).toBe('/v1/chat/completions');
    expect(recorded?.headers['idempotency-key']).toBe(request.requestId);
    expect(recorded?.headers['x-request-id']).toBe(request.requestId);
    expect(recorded?.headers['x-tenant']).toBe('acme');
    expect(recorded?.headers.authorization).toBe('Bearer not-needed');
    expect(recorded?.body).toEqual({
      model: 'sim-small',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello' },
      ],
      temperature: 0,
      max_tokens: 50,
    });
  });

  it('sends exactly one request after a 503 (no hidden SDK retries)', async () => {
    // Arrange
    server = await startFakeServer((_request, res) => sendJson(res, 503, { error: { message: 'busy' } }));
    const provider = createOpenAiCompatibleProvider({ name: 'scripted', baseUrl: `${server.url}/v1`, apiKey: 'k' });

    // Act
    const failure = await failureOf(provider.complete(completionRequest('Hello')));
    await sleep(700); // longer than the SDK's first retry backoff would be

    // Assert
    expect(failure).toMatchObject({ outcome: 'unknown', class: 'bad_gateway', httpStatus: 503 });
    expect(failure.detail).toContain('busy');
    expect(server.requests).toHaveLength(1);
  });

  it('answers content "" when the answer has no choices (the contract check fails it upstream)', async () => {
    // Arrange
    server = await startFakeServer((_request, res) => sendJson(res, 200, { id: 'x', object: 'chat.completion', choices: [] }));
    const provider = createOpenAiCompatibleProvider({ name: 'scripted', baseUrl: `${server.url}/v1` });

    // Act
    const answer = await provider.complete(completionRequest('Hello'));

    // Assert
    expect(answer.content).toBe('');
    expect(answer.raw).toMatchObject({ choices: [] });
  });

  it('answers content "" for a null message content', async () => {
    // Arrange
    server = await startFakeServer((_request, res) => sendJson(res, 200, completion(null)));
    const provider = createOpenAiCompatibleProvider({ name: 'scripted', baseUrl: `${server.url}/v1` });

    // Act
    const answer = await provider.complete(completionRequest('Hello'));

    // Assert
    expect(answer.content).toBe('');
  });

  it('enforces timeoutMs on the whole call, also when the body stalls after the headers', async () => {
    // Arrange: headers and half a body, then nothing. The SDK's own timeout stops at the headers.
    server = await startFakeServer((_request, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id":"chatcmpl-1","choices":[');
    });
    const provider = createOpenAiCompatibleProvider({ name: 'scripted', baseUrl: `${server.url}/v1` });
    const started = Date.now();

    // Act
    const failure = await failureOf(provider.complete(completionRequest('Hello', { timeoutMs: 300 })));

    // Assert
    expect(failure).toMatchObject({ outcome: 'unknown', class: 'timeout' });
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it("classifies the caller's abort after sending as unknown timeout", async () => {
    // Arrange
    server = await startFakeServer(() => undefined); // never answers
    const provider = createOpenAiCompatibleProvider({ name: 'scripted', baseUrl: `${server.url}/v1` });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);

    // Act
    const failure = await failureOf(provider.complete(completionRequest('Hello', { signal: controller.signal })));

    // Assert
    expect(failure).toMatchObject({ outcome: 'unknown', class: 'timeout' });
    expect(failure.detail).toContain('aborted by the caller');
  });

  it('classifies 401 as failed unauthorized', async () => {
    // Arrange
    server = await startFakeServer((_request, res) => sendJson(res, 401, { error: { message: 'bad key' } }));
    const provider = createOpenAiCompatibleProvider({ name: 'scripted', baseUrl: `${server.url}/v1`, apiKey: 'wrong' });

    // Act
    const failure = await failureOf(provider.complete(completionRequest('Hello')));

    // Assert
    expect(failure).toMatchObject({ outcome: 'failed', class: 'unauthorized', httpStatus: 401 });
  });

  it('refuses a non-positive timeoutMs before sending anything', async () => {
    // Arrange
    server = await startFakeServer((_request, res) => sendJson(res, 200, completion('hi')));
    const provider = createOpenAiCompatibleProvider({ name: 'scripted', baseUrl: `${server.url}/v1` });

    // Act / Assert
    await expect(provider.complete(completionRequest('Hello', { timeoutMs: 0 }))).rejects.toThrow(RangeError);
    expect(server.requests).toHaveLength(0);
  });

  it('sends the lookup with the API key and throws on a 404 that is not a JSON error (no lookup endpoint)', async () => {
    // Arrange
    server = await startFakeServer((_request, res) => {
      res.writeHead(404, { 'content-type': 'text/html' });
      res.end('<h1>Not Found</h1>');
    });
    const provider = createOpenAiCompatibleProvider({
      name: 'scripted',
      baseUrl: `${server.url}/v1/`,
      apiKey: 'k-1',
      lookup: true,
    });

    // Act / Assert
    await expect(provider.lookup!('att/1')).rejects.toThrow(/HTTP 404 without a JSON body/);
    expect(server.requests[0]?.url).toBe('/v1/requests/att%2F1');
    expect(server.requests[0]?.headers.authorization).toBe('Bearer k-1');
  });

  it('throws on an unexpected lookup status', async () => {
    // Arrange
    server = await startFakeServer((_request, res) => sendJson(res, 500, { error: { message: 'oops' } }));
    const provider = createOpenAiCompatibleProvider({ name: 'scripted', baseUrl: `${server.url}/v1`, lookup: true });

    // Act / Assert
    await expect(provider.lookup!('att-1')).rejects.toThrow(/unexpected HTTP 500/);
  });
});

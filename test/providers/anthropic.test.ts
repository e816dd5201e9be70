import type http from 'node:http';
import { createAnthropicProvider, toMessagesApi } from '../../src/providers/anthropic';
import {
  closedPort,
  completionRequest,
  failureOf,
  sendJson,
  sleep,
  startFakeServer,
  type FakeServer,
  type RecordedRequest,
} from './fake-http';

/** A Messages API answer with the given content blocks. */
function messageBody(content: unknown[]): unknown {
  return {
    id: 'msg_01',
    type: 'message',
    role: 'assistant',
    model: 'claude-test',
    content,
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5 },
  };
}

/** Anthropic's error body shape. */
function errorBody(type: string, message: string): unknown {
  return { type: 'error', error: { type, message } };
}

describe('anthropic adapter against a Messages API stand-in', () => {
  let server: FakeServer;

  /** Starts the stand-in: POST /v1/messages answered by `answer`, anything else 404. */
  async function startMessagesApi(answer: (request: RecordedRequest, res: http.ServerResponse) => void): Promise<void> {
    server = await startFakeServer((request, res) => {
      if (request.method === 'POST' && request.url === '/v1/messages') answer(request, res);
      else sendJson(res, 404, errorBody('not_found_error', `no route ${request.method} ${request.url}`));
    });
  }

  afterEach(async () => {
    await server?.close();
  });

  it('returns the text blocks concatenated, skipping other blocks', async () => {
    // Arrange
    await startMessagesApi((_request, res) =>
      sendJson(
        res,
        200,
        messageBody([
          { type: 'text', text: '{"reply": "Hello, ' },
          { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} },
          { type: 'text', text: 'world", "escalate": false}' },
        ]),
      ),
    );
    const provider = createAnthropicProvider({ name: 'claude', baseUrl: server.url, apiKey: 'sk-test' });

    // Act
    const answer = await provider.complete(completionRequest('Hi', { model: 'claude-test' }));

    // Assert
    expect(answer.content).toBe('{"reply": "Hello, world", "escalate": false}');
    expect(answer.raw).toMatchObject({ id: 'msg_01', type: 'message' });
    expect(provider.kind).toBe('anthropic');
    expect(provider.lookup).toBeUndefined();
  });

  it('moves system messages to `system` and keeps the conversation in order', async () => {
    // Arrange
    await startMessagesApi((_request, res) => sendJson(res, 200, messageBody([{ type: 'text', text: 'ok' }])));
    const provider = createAnthropicProvider({ name: 'claude', baseUrl: server.url });
    const request = completionRequest('unused', {
      model: 'claude-test',
      messages: [
        { role: 'system', content: 'You are a support agent.' },
        { role: 'user', content: 'My order is late.' },
        { role: 'assistant', content: 'Sorry to hear that.' },
        { role: 'system', content: 'Answer in JSON.' },
        { role: 'user', content: 'What now?' },
      ],
      temperature: 0.2,
    });

    // Act
    await provider.complete(request);

    // Assert
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.body).toEqual({
      model: 'claude-test',
      max_tokens: 1024,
      system: 'You are a support agent.\n\nAnswer in JSON.',
      messages: [
        { role: 'user', content: 'My order is late.' },
        { role: 'assistant', content: 'Sorry to hear that.' },
        { role: 'user', content: 'What now?' },
      ],
      temperature: 0.2,
    });
  });

  it('sends no `system` when there is none, and max_tokens from the request over the default', async () => {
    // Arrange
    await startMessagesApi((_request, res) => sendJson(res, 200, messageBody([{ type: 'text', text: 'ok' }])));
    const provider = createAnthropicProvider({ name: 'claude', baseUrl: server.url, maxTokens: 300 });

    // Act
    await provider.complete(completionRequest('Hello', { maxTokens: 42 }));

    // Assert
    expect(server.requests[0]?.body).not.toHaveProperty('system');
    expect(server.requests[0]?.body.max_tokens).toBe(42);
  });

  it("carries the requestId in Idempotency-Key and X-Request-Id, and the API key", async () => {
    // Arrange
    await startMessagesApi((_request, res) => sendJson(res, 200, messageBody([{ type: 'text', text: 'ok' }])));
    const provider = createAnthropicProvider({ name: 'claude', baseUrl: server.url, apiKey: 'sk-test' });
    const request = completionRequest('Hello');

    // Act
    await provider.complete(request);

    // Assert
    const headers = server.requests[0]?.headers ?? {};
    expect(headers['idempotency-key']).toBe(request.requestId);
    expect(headers['x-request-id']).toBe(request.requestId);
    expect(`${headers['x-api-key'] ?? ''} ${headers.authorization ?? ''}`).toContain('sk-test');
    expect(headers['anthropic-version']).toBeDefined();
  });

  it('classifies 429 as failed rate_limited with retry-after, after exactly one request', async () => {
    // Arrange
    await startMessagesApi((_request, res) =>
      sendJson(res, 429, errorBody('rate_limit_error', 'slow down'), { 'retry-after': '7' }),
    );
    const provider = createAnthropicProvider({ name: 'claude', baseUrl: server.url });

    // Act
    const failure = await failureOf(provider.complete(completionRequest('Hello')));

    // Assert
    expect(failure).toEqual({
      outcome: 'failed',
      class: 'rate_limited',
      httpStatus: 429,
      retryAfterMs: 7_000,
      detail: 'claude: HTTP 429: slow down',
    });
    expect(server.requests).toHaveLength(1);
  });

  it.each([
    [529, 'overloaded_error', 'server_error'],
    [503, 'api_error', 'bad_gateway'],
    [500, 'api_error', 'server_error'],
  ])('classifies %i as unknown and does not retry it', async (status, errorType, expectedClass) => {
    // Arrange
    await startMessagesApi((_request, res) => sendJson(res, status, errorBody(errorType, 'busy')));
    const provider = createAnthropicProvider({ name: 'claude', baseUrl: server.url });

    // Act
    const failure = await failureOf(provider.complete(completionRequest('Hello')));
    await sleep(700); // longer than the SDK's first retry backoff would be

    // Assert
    expect(failure).toMatchObject({ outcome: 'unknown', class: expectedClass, httpStatus: status });
    expect(server.requests).toHaveLength(1);
  });

  it.each([
    [400, 'invalid_request_error', 'bad_request'],
    [401, 'authentication_error', 'unauthorized'],
    [403, 'permission_error', 'unauthorized'],
  ])('classifies %i as failed', async (status, errorType, expectedClass) => {
    // Arrange
    await startMessagesApi((_request, res) => sendJson(res, status, errorBody(errorType, 'no')));
    const provider = createAnthropicProvider({ name: 'claude', baseUrl: server.url });

    // Act
    const failure = await failureOf(provider.complete(completionRequest('Hello')));

    // Assert
    expect(failure).toMatchObject({ outcome: 'failed', class: expectedClass, httpStatus: status });
  });

  it('gives up a hanging call as unknown timeout, promptly', async () => {
    // Arrange
    await startMessagesApi(() => undefined);
    const provider = createAnthropicProvider({ name: 'claude', baseUrl: server.url });
    const started = Date.now();

    // Act
    const failure = await failureOf(provider.complete(completionRequest('Hello', { timeoutMs: 300 })));

    // Assert
    expect(failure).toMatchObject({ outcome: 'unknown', class: 'timeout' });
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(server.requests).toHaveLength(1);
  });

  it('classifies a connection reset after sending as unknown connection_lost', async () => {
    // Arrange
    await startMessagesApi((_request, res) => res.socket?.resetAndDestroy());
    const provider = createAnthropicProvider({ name: 'claude', baseUrl: server.url });

    // Act
    const failure = await failureOf(provider.complete(completionRequest('Hello')));

    // Assert
    expect(failure).toMatchObject({ outcome: 'unknown', class: 'connection_lost' });
    expect(server.requests).toHaveLength(1);
  });

  it('classifies a refused connection as failed refused', async () => {
    // Arrange
    const port = await closedPort();
    const provider = createAnthropicProvider({ name: 'claude', baseUrl: `http://127.0.0.1:${port}` });

    // Act
    const failure = await failureOf(provider.complete(completionRequest('Hello')));

    // Assert
    expect(failure).toMatchObject({ outcome: 'failed', class: 'refused' });
  });
});

describe('toMessagesApi', () => {
  it('leaves system undefined without system messages', () => {
    // Act
    const mapped = toMessagesApi({ messages: [{ role: 'user', content: 'Hi' }] });

    // Assert
    expect(mapped).toEqual({ system: undefined, messages: [{ role: 'user', content: 'Hi' }] });
  });
});

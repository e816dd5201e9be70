import OpenAI from 'openai';
import { startSimProvider, type SimProvider } from '../../src/sim/provider-server';
import { connectionFailure, getJson, postChat, sleep } from './sim-client';

function contentOf(completion: any): string {
  return completion.choices[0].message.content;
}

describe('simulated provider', () => {
  let provider: SimProvider;
  let client: OpenAI;

  beforeEach(async () => {
    provider = await startSimProvider({ name: 'sim-primary' });
    // No hidden retries: each SDK call is exactly one request.
    client = new OpenAI({ baseURL: provider.url, apiKey: 'sim', maxRetries: 0 });
  });

  afterEach(async () => {
    await provider.close();
  });

  describe('ok (default)', () => {
    it('answers an OpenAI SDK request with {reply, escalate} JSON naming the provider', async () => {
      // Act
      const completion = await client.chat.completions.create(
        { model: 'sim-small', messages: [{ role: 'user', content: 'Where is my parcel?' }] },
        { headers: { 'Idempotency-Key': 'att-ok' } },
      );

      // Assert
      expect(completion.object).toBe('chat.completion');
      expect(completion.model).toBe('sim-small');
      expect(completion.choices[0]?.finish_reason).toBe('stop');
      expect(completion.usage?.total_tokens).toBeGreaterThan(0);
      const output = JSON.parse(completion.choices[0]?.message.content ?? '');
      expect(Object.keys(output).sort()).toEqual(['escalate', 'reply']);
      expect(output.reply).toMatch(/^sim-primary: .* \[ref [0-9a-f]{8}\]$/);
      expect(output.escalate).toBe(false);
    });

    it('records the request as completed under its Idempotency-Key, with its output', async () => {
      // Act
      const response = await postChat(provider.url, 'Where is my parcel?', { key: 'att-1' });
      const body = await response.json();

      // Assert
      expect(response.status).toBe(200);
      const [record, ...others] = provider.requests();
      expect(others).toEqual([]);
      expect(record).toMatchObject({
        requestId: 'att-1',
        status: 'completed',
        behaviour: { kind: 'ok' },
        model: 'sim-small',
        messages: [{ role: 'user', content: 'Where is my parcel?' }],
        output: body,
      });
      expect(Date.parse(record?.receivedAt ?? '')).not.toBeNaN();
    });

    it('gives the same output for the same messages', async () => {
      // Act
      const first = contentOf(await (await postChat(provider.url, 'Same words', { key: 'a' })).json());
      const second = contentOf(await (await postChat(provider.url, 'Same words', { key: 'b' })).json());
      const other = contentOf(await (await postChat(provider.url, 'Other words', { key: 'c' })).json());

      // Assert
      expect(second).toBe(first);
      expect(other).not.toBe(first);
    });

    it('names the provider that produced the reply', async () => {
      // Arrange
      const backup = await startSimProvider({ name: 'sim-backup' });
      try {
        // Act
        const fromPrimary = JSON.parse(contentOf(await (await postChat(provider.url, 'Hi')).json()));
        const fromBackup = JSON.parse(contentOf(await (await postChat(backup.url, 'Hi')).json()));

        // Assert
        expect(fromPrimary.reply).toMatch(/^sim-primary: /);
        expect(fromBackup.reply).toMatch(/^sim-backup: /);
      } finally {
        await backup.close();
      }
    });

    it('repeats every distinct @sink directive of the messages at the end of the reply', async () => {
      // Arrange
      const messages = [
        { role: 'system', content: 'You are a support agent.' },
        { role: 'user', content: 'Late again @sink(reset-once) and @sink(delay=50)\nthanks @sink(reset-once)' },
      ];

      // Act
      const output = JSON.parse(contentOf(await (await postChat(provider.url, messages)).json()));

      // Assert
      expect(output.reply).toMatch(/\] @sink\(reset-once\) @sink\(delay=50\)$/);
    });

    it('escalates when a user message asks for a refund, but not for a system prompt mentioning refunds', async () => {
      // Arrange
      const system = { role: 'system', content: 'Escalate refund requests.' };

      // Act
      const refund = JSON.parse(
        contentOf(await (await postChat(provider.url, [system, { role: 'user', content: 'I want a Refund.' }])).json()),
      );
      const plain = JSON.parse(
        contentOf(await (await postChat(provider.url, [system, { role: 'user', content: 'Parcel late.' }])).json()),
      );

      // Assert
      expect(refund.escalate).toBe(true);
      expect(plain.escalate).toBe(false);
    });

    it('ignores a directive addressed to another provider', async () => {
      // Act
      const response = await postChat(provider.url, 'Hi @sim(sim-backup:status=503)');

      // Assert
      expect(response.status).toBe(200);
    });

    it('takes the request id from x-request-id, or generates one, when there is no Idempotency-Key', async () => {
      // Act
      const tagged = await postChat(provider.url, 'Hi', { headers: { 'x-request-id': 'from-header' } });
      const untagged = await postChat(provider.url, 'Hi');

      // Assert
      const [first, second] = provider.requests();
      expect(first?.requestId).toBe('from-header');
      expect(second?.requestId).toMatch(/^req_[0-9a-f]+$/);
      expect(untagged.headers.get('x-request-id')).toBe(second?.requestId);
      expect(tagged.headers.get('x-request-id')).toBe('from-header');
    });
  });

  describe('delay=<ms>', () => {
    it('is executing during the delay, then answers and is completed', async () => {
      // Act
      const started = performance.now();
      const pending = postChat(provider.url, 'Slow @sim(sim-primary:delay=150)', { key: 'att-delay' });
      await sleep(50);
      const during = await getJson(`${provider.url}/requests/att-delay`);
      const response = await pending;
      const elapsedMs = performance.now() - started;
      const after = await getJson(`${provider.url}/requests/att-delay`);

      // Assert
      expect(during.body).toEqual({ requestId: 'att-delay', status: 'executing', output: null });
      expect(response.status).toBe(200);
      expect(elapsedMs).toBeGreaterThanOrEqual(140);
      expect(after.body).toEqual({ requestId: 'att-delay', status: 'completed', output: await response.json() });
    });
  });

  describe('hang', () => {
    it('records the request as executing and never answers', async () => {
      // Act
      const failure = await postChat(provider.url, 'Hello @sim(*:hang)', {
        key: 'att-hang',
        signal: AbortSignal.timeout(150),
      }).catch((error: Error) => error);
      await sleep(100);
      const lookup = await getJson(`${provider.url}/requests/att-hang`);

      // Assert
      expect((failure as Error).name).toBe('TimeoutError');
      expect(lookup.body).toEqual({ requestId: 'att-hang', status: 'executing', output: null });
      expect(provider.requests().map((r) => r.status)).toEqual(['executing']);
    });

    it('lets close() finish promptly despite a hanging connection', async () => {
      // Arrange
      const pending = postChat(provider.url, '@sim(sim-primary:hang)', { key: 'att-stuck' });
      await sleep(50);

      // Act
      const started = performance.now();
      await provider.close();
      const closeMs = performance.now() - started;

      // Assert
      expect(closeMs).toBeLessThan(1000);
      await expect(pending).rejects.toThrow();
    });
  });

  describe('late=<ms>', () => {
    it('is executing when the client gives up, then completes with its output (visible through lookup)', async () => {
      // Act
      const failure = await postChat(provider.url, 'Hi @sim(sim-primary:late=200)', {
        key: 'att-late',
        signal: AbortSignal.timeout(50),
      }).catch((error: Error) => error);
      const early = await getJson(`${provider.url}/requests/att-late`);
      await sleep(250);
      const late = await getJson(`${provider.url}/requests/att-late`);

      // Assert
      expect((failure as Error).name).toBe('TimeoutError');
      expect(early.body.status).toBe('executing');
      expect(late.body.status).toBe('completed');
      expect(JSON.parse(contentOf(late.body.output)).reply).toMatch(/^sim-primary: /);
    });

    it('answers after <ms> if the client is still waiting', async () => {
      // Act
      const started = performance.now();
      const response = await postChat(provider.url, 'Hi @sim(sim-primary:late=100)', { key: 'att-late-ok' });

      // Assert
      expect(response.status).toBe(200);
      expect(performance.now() - started).toBeGreaterThanOrEqual(90);
      expect(JSON.parse(contentOf(await response.json())).reply).toMatch(/^sim-primary: /);
    });
  });

  describe('status=<code>', () => {
    it('answers 429 with an OpenAI error body and retry-after, and records nothing', async () => {
      // Act
      const failure = await client.chat.completions
        .create(
          { model: 'sim-small', messages: [{ role: 'user', content: 'Hi @sim(*:status=429)' }] },
          { headers: { 'Idempotency-Key': 'att-429' } },
        )
        .catch((error: unknown) => error);
      const lookup = await getJson(`${provider.url}/requests/att-429`);

      // Assert
      expect(failure).toBeInstanceOf(OpenAI.RateLimitError);
      const apiError = failure as InstanceType<typeof OpenAI.RateLimitError>;
      expect(apiError.status).toBe(429);
      expect(apiError.headers.get('retry-after')).toBe('1');
      expect(provider.requests()).toEqual([]);
      expect(lookup.status).toBe(404);
    });

    it.each([
      ['status=429,retry-after=2', 429, '2'],
      ['status=429,retry-after=0', 429, '0'],
      ['status=503,retry-after=3', 503, '3'],
    ])('answers %s with that Retry-After, and records nothing', async (directive, code, retryAfter) => {
      // Act
      const response = await postChat(provider.url, `Hi @sim(sim-primary:${directive})`, { key: `att-${directive}` });
      await response.body?.cancel();

      // Assert
      expect(response.status).toBe(code);
      expect(response.headers.get('retry-after')).toBe(retryAfter);
      expect(provider.requests()).toEqual([]);
    });

    it('sends no Retry-After with a status other than 429 unless the directive chooses one', async () => {
      // Act
      const response = await postChat(provider.url, 'Hi @sim(sim-primary:status=503)', { key: 'att-503-plain' });
      await response.body?.cancel();

      // Assert
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBeNull();
    });

    it.each([400, 502, 503, 504])('answers %i with an {error:{message,type,code}} body', async (code) => {
      // Act
      const response = await postChat(provider.url, `Hi @sim(sim-primary:status=${code})`, { key: `att-${code}` });
      const body = await response.json();

      // Assert
      expect(response.status).toBe(code);
      expect(body.error).toEqual({
        message: expect.stringContaining(`status=${code}`),
        type: expect.any(String),
        code: expect.any(String),
      });
      expect(provider.requests()).toEqual([]);
    });
  });

  describe('refuse', () => {
    it('closes the connection without an answer (a clean close, not a reset) and records nothing', async () => {
      // Act
      const code = await connectionFailure(postChat(provider.url, 'Hi @sim(sim-primary:refuse)', { key: 'att-refuse' }));
      const lookup = await getJson(`${provider.url}/requests/att-refuse`);

      // Assert
      expect(code).toBe('UND_ERR_SOCKET');
      expect(provider.requests()).toEqual([]);
      expect(lookup.status).toBe(404);
    });
  });

  describe('reset', () => {
    it('records the request as completed, then resets the connection without answering', async () => {
      // Act
      const code = await connectionFailure(postChat(provider.url, 'Hi @sim(sim-primary:reset)', { key: 'att-reset' }));
      const lookup = await getJson(`${provider.url}/requests/att-reset`);

      // Assert
      expect(code).toBe('ECONNRESET');
      expect(lookup.status).toBe(200);
      expect(lookup.body.status).toBe('completed');
      expect(JSON.parse(contentOf(lookup.body.output)).reply).toMatch(/^sim-primary: /);
    });
  });

  describe('contract violations', () => {
    it('extra-key adds a top-level key to otherwise valid JSON', async () => {
      // Act
      const content = contentOf(await (await postChat(provider.url, 'Hi @sim(*:extra-key)')).json());

      // Assert
      expect(Object.keys(JSON.parse(content)).sort()).toEqual(['confidence', 'escalate', 'reply']);
    });

    it('prose answers English prose instead of JSON, still naming the provider', async () => {
      // Act
      const content = contentOf(await (await postChat(provider.url, 'Hi @sim(*:prose) @sink(reset)')).json());

      // Assert
      expect(() => JSON.parse(content)).toThrow(SyntaxError);
      expect(content).toContain('sim-primary');
      expect(content).toContain('@sink(reset)');
    });
  });

  describe('lookup and other endpoints', () => {
    it('answers 404 with an error body for a request id it never received', async () => {
      // Act
      const lookup = await getJson(`${provider.url}/requests/never-sent`);

      // Assert
      expect(lookup.status).toBe(404);
      expect(lookup.body.error.message).toContain('never-sent');
    });

    it('lists its models', async () => {
      // Act
      const models = await client.models.list();

      // Assert
      expect(models.data.map((m) => m.id)).toEqual(['sim-small', 'sim-large']);
    });

    it('rejects a malformed JSON body with 400 and records nothing', async () => {
      // Act
      const response = await fetch(`${provider.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'att-bad' },
        body: '{"model": "sim-small", "messages": [',
      });
      const body = (await response.json()) as { error: { type: string } };

      // Assert
      expect(response.status).toBe(400);
      expect(body.error.type).toBe('invalid_request_error');
      expect(provider.requests()).toEqual([]);
    });

    it('rejects a request without messages with 400', async () => {
      // Act
      const response = await fetch(`${provider.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-small', messages: [] }),
      });

      // Assert
      expect(response.status).toBe(400);
    });
  });
});

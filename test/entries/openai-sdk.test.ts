import OpenAI from 'openai';
import { aliasDefinition } from '../../src/operations/alias';
import { demoOperations } from '../../src/operations/load';
import { registerOperation } from '../../src/operations/operation';
import { answerCutter } from '../harness/answer-cutter';
import { auth, KEYS, startTestStack, type TestStack } from '../harness/stack';

/**
 * The OpenAI-compatible entry, driven by the official `openai` package (its
 * own retries on): an app written for OpenAI gets one job per intent by
 * changing its base URL and sending an Idempotency-Key.
 */
describe('the OpenAI-compatible entry, through the official SDK', () => {
  let stack: TestStack;
  let baseURL: string;
  /** Every answer the SDK got, in order; answers to drop on the way back, after Onceflow has answered. */
  const cutter = answerCutter();

  // A route step with no hedge, so that an unknown attempt waits for an operator.
  const strict = registerOperation(aliasDefinition({ name: 'strict-chat', route: ['sim-primary', 'sim-backup'], probes: [{ name: 'hello', messages: [{ role: 'user', content: 'Say hello.' }] }] }, { file: 'test', pointer: '/aliases/1' }));

  const client = (options: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}) =>
    new OpenAI({
      baseURL,
      apiKey: KEYS.alice,
      maxRetries: 4,
      fetch: cutter.fetch,
      ...options,
    });
  const key = (name: string) => ({ headers: { 'Idempotency-Key': `${name}-${Date.now()}-${Math.random()}` } });

  beforeAll(async () => {
    stack = await startTestStack({ operations: new Map([...demoOperations().registry, [strict.name, strict]]), env: { ONCEFLOW_ENTRY_WAIT_SECONDS: '1' } });
    baseURL = `${await stack.app.listen({ host: '127.0.0.1', port: 0 })}/openai/v1`;
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
  });
  beforeEach(() => {
    cutter.clear();
  });

  const jobsOf = async (jobId: string) => (await stack.db.pool.query(`SELECT count(*)::int AS attempts FROM attempts WHERE job_id = $1`, [jobId])).rows[0].attempts as number;

  it("answers with the winning attempt's completion, and a retry of the same key with the same bytes, replayed", async () => {
    // Arrange
    const options = key('answer');
    const body = { model: 'support-chat', messages: [{ role: 'user' as const, content: 'Where is my parcel?' }] };

    // Act
    const first = await client().chat.completions.create(body, options).withResponse();
    const again = await client().chat.completions.create(body, options).asResponse();

    // Assert
    const jobId = first.response.headers.get('onceflow-job-id')!;
    expect(first.data).toMatchObject({ id: `chatcmpl-${jobId}`, object: 'chat.completion', model: 'support-chat', choices: [{ index: 0, message: { role: 'assistant', content: expect.any(String) }, finish_reason: 'stop' }] });
    expect(first.data.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(first.data.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(first.response.headers.get('onceflow-attempt-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(first.response.headers.get('idempotent-replayed')).toBeNull();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(JSON.stringify(first.data));
    expect(await jobsOf(jobId)).toBe(1);
  });

  it('gives one job and one billed attempt when the answer is lost on the way back and the SDK retries', async () => {
    // Arrange: the first answer is dropped after Onceflow sent it
    cutter.cutNext(1);
    const options = key('cut');

    // Act
    const answer = await client().chat.completions.create({ model: 'support-chat', messages: [{ role: 'user', content: 'I was charged twice.' }] }, options).withResponse();

    // Assert
    const jobId = answer.response.headers.get('onceflow-job-id')!;
    expect(cutter.statuses).toEqual(['cut', 200]);
    expect(answer.response.headers.get('idempotent-replayed')).toBe('true');
    const { rows } = await stack.db.pool.query(`SELECT id FROM jobs WHERE principal_id = 'alice' AND idempotency_key = $1`, [options.headers['Idempotency-Key']]);
    expect(rows).toEqual([{ id: jobId }]);
    expect(await jobsOf(jobId)).toBe(1);
    const settled = await stack.db.pool.query(`SELECT attempts FROM settlements WHERE job_id = $1`, [jobId]);
    expect(settled.rows).toEqual([{ attempts: 1 }]);
  });

  it("raises the SDK's ConflictError at once for the same key with other messages", async () => {
    // Arrange
    const options = key('conflict');
    await client().chat.completions.create({ model: 'support-chat', messages: [{ role: 'user', content: 'First intent.' }] }, options);
    cutter.clear();

    // Act
    const refused = await client().chat.completions.create({ model: 'support-chat', messages: [{ role: 'user', content: 'Another intent.' }] }, options).catch((err: unknown) => err);

    // Assert: not retried (x-should-retry: false), in the SDK's own error type and shape
    expect(refused).toBeInstanceOf(OpenAI.ConflictError);
    expect(refused).toMatchObject({ status: 409, code: 'idempotency-key-reused', type: 'conflict_error' });
    expect(cutter.statuses).toHaveLength(1);
  });

  it('attaches through 409 retries while the attempt is unknown, and answers with the fallback once an operator resolves it', async () => {
    // Arrange: the primary never answers; the alias does not hedge
    const options = key('hung');
    const pending = client({ maxRetries: 40 }).chat.completions.create({ model: 'strict-chat', messages: [{ role: 'user', content: 'Hello? @sim(sim-primary:hang)' }] }, options).withResponse();

    // Act: an operator resolves the unknown attempt once the SDK has been told 409 at least once
    const job = await waitForJobOfKey(options.headers['Idempotency-Key'], (view) => view.attempts?.some((a: { status: string }) => a.status === 'unknown'));
    await until(() => cutter.statuses.includes(409));
    const unknown = job.attempts.find((a: { status: string }) => a.status === 'unknown');
    const resolved = await stack.app.inject({ method: 'POST', url: `/v1/jobs/${job.id}/attempts/${unknown.id}/resolution`, headers: auth(KEYS.operator), payload: { outcome: 'failed', reason: 'the provider lost it' } });
    const answer = await pending;

    // Assert
    expect(resolved.statusCode).toBe(200);
    expect(answer.response.headers.get('onceflow-job-id')).toBe(job.id);
    const winner = (await stack.db.pool.query(`SELECT provider FROM attempts WHERE id = $1`, [answer.response.headers.get('onceflow-attempt-id')])).rows[0];
    expect(winner.provider).toBe('sim-backup');
    expect(answer.data.choices[0]!.message.content).toContain('sim-backup');
  }, 60_000);

  it('streams the stored answer as chat.completion.chunk events, read by the SDK, the same text as the answer', async () => {
    // Arrange
    const options = key('stream');
    const body = { model: 'support-chat', messages: [{ role: 'user' as const, content: 'Stream me an answer.' }] };

    // Act
    const stream = await client().chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }, options);
    let text = '';
    let usage;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      usage = chunk.usage ?? usage;
    }
    const whole = await client().chat.completions.create(body, options);
    const helper = await client().chat.completions.stream(body, options).finalChatCompletion();

    // Assert
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(usage).toEqual(whole.usage);
    expect(helper.choices[0]!.message.content).toBe(text);
  });

  it.each([
    ['a missing Idempotency-Key', {}, { model: 'support-chat', messages: [{ role: 'user', content: 'x' }] }, OpenAI.BadRequestError, /Idempotency-Key/],
    ['a model that is no alias', undefined, { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }, OpenAI.NotFoundError, /no model alias named "gpt-4o"/],
    ['an operation that is no alias', undefined, { model: 'support.reply', messages: [{ role: 'user', content: 'x' }] }, OpenAI.NotFoundError, /no model alias named "support.reply"/],
    ['max_tokens over the alias limit', undefined, { model: 'support-chat', messages: [{ role: 'user', content: 'x' }], max_tokens: 5000 }, OpenAI.BadRequestError, /^400 max_tokens must be <= 4096$/],
    ['tools', undefined, { model: 'support-chat', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'f' } }] }, OpenAI.BadRequestError, /tools is not supported/],
    ['an image part', undefined, { model: 'support-chat', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }] }, OpenAI.BadRequestError, /messages\.0\.content\.0\.type is not supported/],
  ])('refuses %s with the SDK error of its status, not retried', async (_name, headers, body, errorType, message) => {
    // Act
    const refused = await client()
      .chat.completions.create(body as never, headers === undefined ? key('refused') : { headers })
      .catch((err: unknown) => err);

    // Assert
    expect(refused).toBeInstanceOf(errorType);
    expect((refused as Error).message).toMatch(message);
    expect(cutter.statuses).toHaveLength(1);
  });

  it('refuses an operator key with the PermissionDeniedError: operators do not act as tenants', async () => {
    const refused = await client({ apiKey: KEYS.operator }).chat.completions.create({ model: 'support-chat', messages: [{ role: 'user', content: 'x' }] }, key('operator')).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
  });

  it('refuses a wrong key with the AuthenticationError', async () => {
    const refused = await client({ apiKey: 'k_nobody' }).chat.completions.create({ model: 'support-chat', messages: [{ role: 'user', content: 'x' }] }, key('auth')).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  async function until(predicate: () => boolean, timeoutMs = 20_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > end) throw new Error('timed out');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function waitForJobOfKey(idempotencyKey: string, predicate: (job: any) => boolean): Promise<any> {
    const end = Date.now() + 20_000;
    for (;;) {
      const { rows } = await stack.db.pool.query(`SELECT id FROM jobs WHERE principal_id = 'alice' AND idempotency_key = $1`, [idempotencyKey]);
      if (rows[0]) {
        const view = JSON.parse((await stack.app.inject({ method: 'GET', url: `/v1/jobs/${rows[0].id}`, headers: auth(KEYS.operator) })).body);
        if (predicate(view)) return view;
      }
      if (Date.now() > end) throw new Error(`no job of ${idempotencyKey} became as expected`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
});

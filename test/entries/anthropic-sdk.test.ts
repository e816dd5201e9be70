import Anthropic from '@anthropic-ai/sdk';
import { aliasDefinition } from '../../src/operations/alias';
import { demoOperations } from '../../src/operations/load';
import { registerOperation } from '../../src/operations/operation';
import { answerCutter } from '../harness/answer-cutter';
import { auth, KEYS, startTestStack, type TestStack } from '../harness/stack';

/**
 * The Anthropic-native entry, driven by the official `@anthropic-ai/sdk`
 * package (its own retries on). This version sends its key as
 * Authorization: Bearer; Anthropic's documented requests send x-api-key: both name the principal.
 */
describe('the Anthropic entry, through the official SDK', () => {
  let stack: TestStack;
  let baseURL: string;
  /** Every answer the SDK got, in order; answers to drop on the way back, after Onceflow has answered. */
  const cutter = answerCutter();

  const client = (options: Partial<ConstructorParameters<typeof Anthropic>[0]> = {}) =>
    new Anthropic({
      baseURL,
      apiKey: KEYS.alice,
      maxRetries: 4,
      fetch: cutter.fetch,
      ...options,
    });
  const key = (name: string) => ({ headers: { 'Idempotency-Key': `${name}-${Date.now()}-${Math.random()}` } });
  const body = (content: string) => ({ model: 'support-chat', max_tokens: 256, system: 'You help support agents.', messages: [{ role: 'user' as const, content }] });

  beforeAll(async () => {
    // Beside the demo alias, one that does not hedge: an unknown attempt waits for an operator.
    const strict = registerOperation(aliasDefinition({ name: 'strict-chat', route: ['sim-primary', 'sim-backup'], probes: [{ name: 'hello', messages: [{ role: 'user', content: 'Say hello.' }] }] }, { file: 'test', pointer: '/aliases/1' }));
    stack = await startTestStack({ operations: new Map([...demoOperations().registry, [strict.name, strict]]), env: { ONCEFLOW_ENTRY_WAIT_SECONDS: '1' } });
    baseURL = `${await stack.app.listen({ host: '127.0.0.1', port: 0 })}/anthropic`;
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
  });
  beforeEach(() => {
    cutter.clear();
  });

  it("answers with the winning attempt's message, and a retry of the same key with the same bytes, replayed", async () => {
    // Arrange
    const options = key('answer');

    // Act
    const first = await client().messages.create(body('Where is my parcel?'), options).withResponse();
    const again = await client().messages.create(body('Where is my parcel?'), options).asResponse();

    // Assert
    const jobId = first.response.headers.get('onceflow-job-id')!;
    expect(first.data).toMatchObject({ id: `msg_${jobId}`, type: 'message', role: 'assistant', model: 'support-chat', stop_reason: 'end_turn', content: [{ type: 'text', text: expect.any(String) }] });
    expect(first.data.usage.input_tokens).toBeGreaterThan(0);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(JSON.stringify(first.data));
    const { rows } = await stack.db.pool.query(`SELECT count(*)::int AS n FROM attempts WHERE job_id = $1`, [jobId]);
    expect(rows[0].n).toBe(1);
  });

  it('gives one job when the answer is lost on the way back and the SDK retries', async () => {
    // Arrange
    cutter.cutNext(1);
    const options = key('cut');

    // Act
    const answer = await client().messages.create(body('I was charged twice.'), options).withResponse();

    // Assert
    expect(cutter.statuses).toEqual(['cut', 200]);
    const { rows } = await stack.db.pool.query(`SELECT id FROM jobs WHERE principal_id = 'alice' AND idempotency_key = $1`, [options.headers['Idempotency-Key']]);
    expect(rows).toEqual([{ id: answer.response.headers.get('onceflow-job-id') }]);
  });

  it("raises the SDK's ConflictError at once for the same key with other messages", async () => {
    // Arrange
    const options = key('conflict');
    await client().messages.create(body('First intent.'), options);
    cutter.clear();

    // Act
    const refused = await client().messages.create(body('Another intent.'), options).catch((err: unknown) => err);

    // Assert
    expect(refused).toBeInstanceOf(Anthropic.ConflictError);
    expect((refused as InstanceType<typeof Anthropic.ConflictError>).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/already used for a different request/) } });
    expect(cutter.statuses).toEqual([409]);
  });

  it('attaches through 409 retries while the attempt is unknown, and answers with the fallback once an operator resolves it', async () => {
    // Arrange: the primary never answers
    const options = key('hung');
    const pending = client({ maxRetries: 40 }).messages.create({ ...body('Hello? @sim(sim-primary:hang)'), model: 'strict-chat' }, options).withResponse();

    // Act: once the SDK was told 409, an operator resolves the unknown attempt
    let job: { id: string; attempts: Array<{ id: string; status: string }> } | undefined;
    for (const end = Date.now() + 20_000; !(job?.attempts.some((a) => a.status === 'unknown') && cutter.statuses.includes(409)); ) {
      if (Date.now() > end) throw new Error('the attempt never became unknown while the SDK retried');
      await new Promise((resolve) => setTimeout(resolve, 100));
      const { rows } = await stack.db.pool.query(`SELECT id FROM jobs WHERE principal_id = 'alice' AND idempotency_key = $1`, [options.headers['Idempotency-Key']]);
      if (rows[0]) job = JSON.parse((await stack.app.inject({ method: 'GET', url: `/v1/jobs/${rows[0].id}`, headers: auth(KEYS.operator) })).body);
    }
    const unknown = job!.attempts.find((a) => a.status === 'unknown')!;
    const resolved = await stack.app.inject({ method: 'POST', url: `/v1/jobs/${job!.id}/attempts/${unknown.id}/resolution`, headers: auth(KEYS.operator), payload: { outcome: 'failed', reason: 'the provider lost it' } });
    const answer = await pending;

    // Assert
    expect(resolved.statusCode).toBe(200);
    expect(answer.response.headers.get('onceflow-job-id')).toBe(job!.id);
    const winner = (await stack.db.pool.query(`SELECT provider FROM attempts WHERE id = $1`, [answer.response.headers.get('onceflow-attempt-id')])).rows[0];
    expect(winner.provider).toBe('sim-backup');
  }, 60_000);

  it("streams the stored answer as the protocol's events, read by the SDK's stream helper", async () => {
    // Arrange
    const options = key('stream');

    // Act
    const streamed = await client().messages.stream(body('Stream me an answer.'), options).finalMessage();
    const whole = await client().messages.create(body('Stream me an answer.'), options);

    // Assert
    expect(streamed.content).toEqual(whole.content);
    expect(streamed.usage.output_tokens).toBe(whole.usage.output_tokens);
    expect(streamed.stop_reason).toBe('end_turn');
  });

  it.each([
    ['a missing Idempotency-Key', {}, body('x'), Anthropic.BadRequestError, /Idempotency-Key/],
    ['tools', undefined, { ...body('x'), tools: [{ name: 'f', input_schema: { type: 'object' as const } }] }, Anthropic.BadRequestError, /tools is not supported/],
    ['an image block', undefined, { ...body('x'), messages: [{ role: 'user' as const, content: [{ type: 'image' as const, source: { type: 'url' as const, url: 'https://example.com/a.png' } }] }] }, Anthropic.BadRequestError, /messages\.0\.content\.0\.type is not supported/],
    ['a model that is no alias', undefined, { ...body('x'), model: 'claude-house-1' }, Anthropic.NotFoundError, /no model alias named .*claude-house-1/],
  ])('refuses %s with the SDK error of its status, not retried', async (_name, headers, request, errorType, message) => {
    // Act
    const refused = await client()
      .messages.create(request as never, headers === undefined ? key('refused') : { headers })
      .catch((err: unknown) => err);

    // Assert
    expect(refused).toBeInstanceOf(errorType);
    expect((refused as Error).message).toMatch(message);
    expect(cutter.statuses).toHaveLength(1);
  });

  it("takes the key as x-api-key too, as Anthropic's documented requests send it", async () => {
    // Act: what curl sends by Anthropic's documentation (this SDK's version sends Authorization: Bearer)
    const response = await fetch(`${baseURL}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': KEYS.alice, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...key('x-api-key').headers },
      body: JSON.stringify(body('By x-api-key.')),
    });

    // Assert
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ type: 'message', content: [{ type: 'text' }] });
  });

  it('refuses a wrong key with the AuthenticationError', async () => {
    const refused = await client({ apiKey: 'k_nobody' }).messages.create(body('x'), key('auth')).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(Anthropic.AuthenticationError);
  });
});

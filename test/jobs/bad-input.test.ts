import { randomUUID } from 'node:crypto';
import { auth, KEYS, startTestStack, type TestStack } from '../harness/stack';

const valid = { operation: 'support.reply', input: { ticketId: 'T-1', customerMessage: 'Hello', channel: 'chat' } };

describe('bad input to POST /v1/jobs', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false, env: { ONCEFLOW_BODY_LIMIT_BYTES: String(4 * 1024) } });
  });
  afterAll(() => stack.close());

  const post = (opts: { headers?: Record<string, string>; payload?: string | object; key?: string | null }) =>
    stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: {
        ...auth(KEYS.alice),
        ...(opts.key === null ? {} : { 'idempotency-key': opts.key ?? randomUUID() }),
        ...(typeof opts.payload === 'string' ? { 'content-type': 'application/json' } : {}),
        ...opts.headers,
      },
      payload: opts.payload ?? valid,
    });

  const jobCount = async () => Number((await stack.db.pool.query('SELECT count(*) FROM jobs')).rows[0].count);

  const cases: Array<{ name: string; status: number; type: RegExp; request: Parameters<typeof post>[0]; pointers?: string[] }> = [
    { name: 'no Authorization header', status: 401, type: /unauthorized$/, request: { headers: { authorization: '' } } },
    { name: 'a wrong API key', status: 401, type: /unauthorized$/, request: { headers: { authorization: 'Bearer nope' } } },
    { name: 'a missing Idempotency-Key', status: 400, type: /missing-idempotency-key$/, request: { key: null } },
    { name: 'an Idempotency-Key over 255 characters', status: 400, type: /invalid-idempotency-key$/, request: { key: 'k'.repeat(256) } },
    { name: 'an Idempotency-Key with a non-ASCII character', status: 400, type: /invalid-idempotency-key$/, request: { key: 'clé' } },
    { name: 'malformed JSON', status: 400, type: /malformed-json$/, request: { payload: '{"operation": "support.reply", ' } },
    { name: 'a body that is not an object', status: 400, type: /validation$/, request: { payload: '[1,2]' } },
    { name: 'a missing operation', status: 400, type: /validation$/, request: { payload: { input: valid.input } }, pointers: ['/operation'] },
    { name: 'an unknown operation', status: 400, type: /unknown-operation$/, request: { payload: { operation: 'nope.nothing', input: {} } } },
    {
      name: 'input that breaks the operation schema, naming each field',
      status: 400,
      type: /validation$/,
      request: { payload: { operation: 'support.reply', input: { ticketId: '', channel: 'fax', extra: 1 } } },
      pointers: ['/input/ticketId', '/input/customerMessage', '/input/channel', '/input/extra'],
    },
    { name: 'a ticketId over 64 characters', status: 400, type: /validation$/, request: { payload: { ...valid, input: { ...valid.input, ticketId: 'x'.repeat(65) } } }, pointers: ['/input/ticketId'] },
    { name: 'a customerMessage over 4000 characters', status: 400, type: /validation$/, request: { payload: { ...valid, input: { ...valid.input, customerMessage: 'x'.repeat(4001) } } }, pointers: ['/input/customerMessage'] },
    { name: 'a body over the limit', status: 413, type: /payload-too-large$/, request: { payload: { ...valid, input: { ...valid.input, customerMessage: 'x'.repeat(5000) } } } },
    { name: 'a body that is not JSON', status: 415, type: /unsupported-media-type$/, request: { headers: { 'content-type': 'text/plain' }, payload: 'hello' } },
    { name: 'Prefer: wait over 60 seconds', status: 400, type: /invalid-preference$/, request: { headers: { prefer: 'wait=61' } } },
    { name: 'Prefer: wait that is not a number', status: 400, type: /invalid-preference$/, request: { headers: { prefer: 'wait=soon' } } },
  ];

  it.each(cases)('answers $name with $status problem+json and records nothing', async ({ status, type, request, pointers }) => {
    // Arrange
    const before = await jobCount();

    // Act
    const response = await post(request);

    // Assert
    expect(response.statusCode).toBe(status);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = response.json();
    expect(problem).toMatchObject({ status, title: expect.any(String), detail: expect.any(String) });
    expect(problem.type).toMatch(type);
    if (pointers) expect(problem.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual([...pointers].sort());
    expect(await jobCount()).toBe(before);
  });

  it.each([
    ['__proto__ inside the input', '{"operation":"support.reply","input":{"ticketId":"T-1","customerMessage":"Hello","channel":"chat","__proto__":{"isAdmin":true}}}', '/input/__proto__'],
    ['__proto__ at the top', '{"__proto__":{"isAdmin":true},"operation":"support.reply","input":{}}', '/__proto__'],
    ['a constructor with a prototype', '{"operation":"support.reply","input":{"constructor":{"prototype":{"isAdmin":true}}}}', '/input/constructor'],
    ['__proto__ spelled with an escape', '{"operation":"support.reply","input":{"ticketId":"T-1","customerMessage":"Hello","channel":"chat","\\u005f_proto__":{"isAdmin":true}}}', '/input/__proto__'],
    ['a constructor spelled with an escape', '{"operation":"support.reply","input":{"\\u0063onstructor":{"prototype":{"isAdmin":true}}}}', '/input/constructor'],
  ])('refuses %s with 400 naming the forbidden key, not calling the body malformed JSON', async (_name, payload, pointer) => {
    // Arrange
    const before = await jobCount();

    // Act
    const response = await post({ payload });

    // Assert
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = response.json();
    expect(problem.type).not.toMatch(/malformed-json$/);
    expect(problem.detail).not.toMatch(/not valid JSON/i);
    expect(problem.errors).toEqual([{ pointer, detail: expect.stringMatching(/forbidden key/) }]);
    expect(await jobCount()).toBe(before);
  });

  // The checks of a body come before its key is looked up: a key that already
  // names a job does not let a bad body through as a replay.
  describe('with a key that already names a job', () => {
    const key = randomUUID();
    let jobId: string;
    beforeAll(async () => {
      const first = await post({ key, payload: valid });
      expect(first.statusCode).toBe(202);
      jobId = first.json().id;
    });

    it.each([
      { name: 'malformed JSON', status: 400, type: /malformed-json$/, payload: '{"operation": "support.reply", ' as string | object },
      { name: 'NUL in an input value', status: 400, type: /validation$/, payload: { ...valid, input: { ...valid.input, customerMessage: 'Hello\u0000' } } },
      { name: 'a lone surrogate in an input value', status: 400, type: /validation$/, payload: { ...valid, input: { ...valid.input, customerMessage: 'Hello\ud800' } } },
      { name: '__proto__ spelled with an escape', status: 400, type: /validation$/, payload: '{"operation":"support.reply","input":{"ticketId":"T-1","customerMessage":"Hello","channel":"chat","\\u005f_proto__":{}}}' },
      { name: 'input that breaks the operation schema', status: 400, type: /validation$/, payload: { ...valid, input: { ...valid.input, channel: 'fax' } } },
      { name: 'an unknown operation', status: 400, type: /unknown-operation$/, payload: { ...valid, operation: 'nope.nothing' } },
    ])('answers $name as it would without the key, and leaves the job as it was', async ({ status, type, payload }) => {
      // Arrange
      const before = (await stack.db.pool.query('SELECT status, version, updated_at FROM jobs WHERE id = $1', [jobId])).rows[0];

      // Act
      const withKey = await post({ key, payload });
      const withoutKey = await post({ payload });

      // Assert
      expect(withKey.statusCode).toBe(status);
      expect(withKey.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(withKey.headers['idempotent-replayed']).toBeUndefined();
      expect(withKey.json().type).toMatch(type);
      expect(withKey.json()).toEqual(withoutKey.json());
      expect((await stack.db.pool.query('SELECT status, version, updated_at FROM jobs WHERE id = $1', [jobId])).rows[0]).toEqual(before);
    });

    it('still replays the same body with the key', async () => {
      // Act
      const replay = await post({ key, payload: valid });

      // Assert
      expect(replay.statusCode).toBe(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.json().id).toBe(jobId);
    });
  });

  it('tells a client without a key how to authenticate', async () => {
    const response = await post({ headers: { authorization: '' } });
    expect(response.headers['www-authenticate']).toBe('Bearer');
  });
});

describe('rate limit', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false, env: { ONCEFLOW_RATE_LIMIT_PER_MINUTE: '3' } });
  });
  afterAll(() => stack.close());

  it('answers 429 with Retry-After once a principal is over its limit, and not another principal', async () => {
    // Arrange
    const post = (key: string) =>
      stack.app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth(key), 'idempotency-key': randomUUID() }, payload: { operation: 'nope', input: {} } });

    // Act
    const alice = [];
    for (let i = 0; i < 4; i++) alice.push(await post(KEYS.alice));
    const bob = await post(KEYS.bob);

    // Assert
    expect(alice.slice(0, 3).map((r) => r.statusCode)).toEqual([400, 400, 400]);
    expect(alice[3]!.statusCode).toBe(429);
    expect(alice[3]!.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(Number(alice[3]!.headers['retry-after'])).toBeGreaterThan(0);
    expect(alice[3]!.json().type).toMatch(/rate-limited$/);
    expect(bob.statusCode).toBe(400);
  });
});

import { randomUUID } from 'node:crypto';
import { createApiKey, listApiKeys, revokeApiKey } from '../../src/ledger/api-keys';
import { KeyRole, parseKey } from '../../src/keys/api-key';
import { auth, KEYS, startTestStack, submitReply, type TestStack } from '../harness/stack';

/**
 * Keys kept in PostgreSQL: stored as the hash of their secret, found by their
 * public id, refused from the moment they are revoked, and recorded when used.
 * The environment's keys keep working beside them.
 */
describe('API keys in the database', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // Wrong keys are sent on purpose here: they must not lock the test's address out.
    stack = await startTestStack({ worker: false, env: { ONCEFLOW_AUTH_FAILURES_PER_WINDOW: '1000' } });
  });
  afterAll(() => stack.close());

  const readJob = (key: string, id: string) => stack.app.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers: auth(key) });

  it('creates a key shown once as of_<id>_<secret> and stores only the hash of its secret', async () => {
    // Act
    const { key, record } = await createApiKey(stack.db.pool, { principal: 'carol', role: KeyRole.tenant });

    // Assert
    const parsed = parseKey(key)!;
    expect(parsed.id).toBe(record.id);
    const { rows } = await stack.db.pool.query('SELECT * FROM api_keys WHERE id = $1', [record.id]);
    expect(JSON.stringify(rows[0])).not.toContain(parsed.secret);
    expect(rows[0].secret_sha256).toHaveLength(32);
    expect(record).toMatchObject({ principal: 'carol', role: 'tenant', lastUsedAt: null, revokedAt: null });
  });

  it('lists keys without their secret or hash', async () => {
    // Arrange
    const { record } = await createApiKey(stack.db.pool, { principal: 'dave', role: KeyRole.operator });

    // Act
    const keys = await listApiKeys(stack.db.pool);

    // Assert
    const listed = keys.find((k) => k.id === record.id)!;
    expect(Object.keys(listed).sort()).toEqual(['createdAt', 'id', 'lastUsedAt', 'principal', 'revokedAt', 'role']);
    expect(listed).toMatchObject({ principal: 'dave', role: 'operator' });
  });

  it('refuses a tenant key for the reserved operator principal', async () => {
    await expect(createApiKey(stack.db.pool, { principal: 'operator', role: KeyRole.tenant })).rejects.toThrow(/reserved/);
  });

  it("authenticates a created tenant key as its principal, who sees only that principal's jobs", async () => {
    // Arrange
    const { key } = await createApiKey(stack.db.pool, { principal: 'alice', role: KeyRole.tenant });
    const aliceJob = (await submitReply(stack, { message: 'db key', key: randomUUID() })).json().id;
    const bobJob = (await submitReply(stack, { message: 'db key', key: randomUUID(), apiKey: KEYS.bob })).json().id;

    // Act
    const own = await readJob(key, aliceJob);
    const other = await readJob(key, bobJob);

    // Assert
    expect(own.statusCode).toBe(200);
    expect(other.statusCode).toBe(404);
  });

  it('submits as the principal of a database key', async () => {
    // Arrange
    const { key } = await createApiKey(stack.db.pool, { principal: 'erin', role: KeyRole.tenant });

    // Act
    const response = await submitReply(stack, { message: 'from a db key', key: randomUUID(), apiKey: key });

    // Assert
    expect(response.statusCode).toBe(202);
    const { rows } = await stack.db.pool.query('SELECT principal_id FROM jobs WHERE id = $1', [response.json().id]);
    expect(rows[0].principal_id).toBe('erin');
  });

  it('authenticates an operator key as an operator, and resolutions name the person and the key', async () => {
    // Arrange
    const { key, record } = await createApiKey(stack.db.pool, { principal: 'olga', role: KeyRole.operator });
    const jobId = (await submitReply(stack, { message: 'cancel me', key: randomUUID() })).json().id;

    // Act
    const denied = await submitReply(stack, { message: 'operators do not submit', key: randomUUID(), apiKey: key });
    const cancelled = await stack.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/cancel`, headers: auth(key), payload: { reason: 'asked to' } });

    // Assert
    expect(denied.statusCode).toBe(403);
    expect(cancelled.statusCode).toBe(200);
    expect(JSON.stringify(cancelled.json().events)).toContain(`operator:olga/${record.id}`);
  });

  it('refuses a revoked key with 401 on the very next request', async () => {
    // Arrange
    const { key, record } = await createApiKey(stack.db.pool, { principal: 'alice', role: KeyRole.tenant });
    const jobId = (await submitReply(stack, { message: 'revoke', key: randomUUID() })).json().id;
    expect((await readJob(key, jobId)).statusCode).toBe(200);

    // Act
    await revokeApiKey(stack.db.pool, record.id);
    const response = await readJob(key, jobId);

    // Assert
    expect(response.statusCode).toBe(401);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  it('refuses a key whose secret was changed, and a well-formed key with an unknown id', async () => {
    // Arrange
    const { key } = await createApiKey(stack.db.pool, { principal: 'alice', role: KeyRole.tenant });
    const { id, secret } = parseKey(key)!;
    const flipped = secret.slice(0, -1) + (secret.endsWith('a') ? 'b' : 'a');
    const jobId = (await submitReply(stack, { message: 'tamper', key: randomUUID() })).json().id;

    // Act
    const tampered = await readJob(`of_${id}_${flipped}`, jobId);
    const unknownId = await readJob(`of_${id.endsWith('a') ? id.slice(0, -1) + 'b' : id.slice(0, -1) + 'a'}_${secret}`, jobId);

    // Assert
    expect(tampered.statusCode).toBe(401);
    expect(unknownId.statusCode).toBe(401);
  });

  it('records when a key was last used, once a minute at most', async () => {
    // Arrange
    const { key, record } = await createApiKey(stack.db.pool, { principal: 'alice', role: KeyRole.tenant });
    const jobId = (await submitReply(stack, { message: 'last used', key: randomUUID() })).json().id;
    const lastUsed = async (): Promise<Date | null> => (await stack.db.pool.query('SELECT last_used_at FROM api_keys WHERE id = $1', [record.id])).rows[0].last_used_at;

    // Act
    await readJob(key, jobId);
    let first: Date | null = null;
    for (let i = 0; i < 50 && !first; i++) {
      first = await lastUsed();
      if (!first) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await readJob(key, jobId);
    await new Promise((resolve) => setTimeout(resolve, 200));

    // Assert
    expect(first).toBeInstanceOf(Date);
    expect(await lastUsed()).toEqual(first);
  });

  it('keeps the environment keys working beside the database ones', async () => {
    // Arrange
    const jobId = (await submitReply(stack, { message: 'env keys', key: randomUUID() })).json().id;

    // Act
    const tenant = await readJob(KEYS.alice, jobId);
    const operator = await readJob(KEYS.operator, jobId);

    // Assert
    expect(tenant.statusCode).toBe(200);
    expect(operator.statusCode).toBe(200);
  });

  it('counts a revoked key against the address like any wrong key', async () => {
    // Arrange: an app whose throttle refuses after two failures.
    const strict = await startTestStack({ worker: false, env: { ONCEFLOW_AUTH_FAILURES_PER_WINDOW: '2' } });
    try {
      const { key, record } = await createApiKey(strict.db.pool, { principal: 'alice', role: KeyRole.tenant });
      await revokeApiKey(strict.db.pool, record.id);
      const get = (k: string) => strict.app.inject({ method: 'GET', url: `/v1/jobs/${randomUUID()}`, headers: auth(k) });

      // Act
      const statuses = [(await get(key)).statusCode, (await get(key)).statusCode, (await get(KEYS.alice)).statusCode];

      // Assert
      expect(statuses).toEqual([401, 401, 429]);
    } finally {
      await strict.close();
    }
  });
});

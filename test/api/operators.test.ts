import { randomUUID } from 'node:crypto';
import { commitAttemptResult, markAttemptRunning, openAttempt } from '../../src/ledger/attempts';
import { claimEffect } from '../../src/ledger/effects';
import { auth, KEYS, startTestStack, submitReply, type TestStack } from '../harness/stack';

/**
 * What an operator key may do: read any job, resolve unknown attempts and
 * effects in review, see and verify providers, and cancel any job (audited
 * with who did it). It never acts as a tenant: it submits no jobs.
 */
describe('operator keys', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

  const input = { ticketId: 'T-9', customerMessage: 'Hello', channel: 'chat' };
  const jobCount = async () => Number((await stack.db.pool.query('SELECT count(*) FROM jobs')).rows[0].count);
  const aliceJob = async (): Promise<string> => (await submitReply(stack, { message: 'operators', key: randomUUID() })).json().id;

  it('may not submit a job: 403 problem+json and nothing recorded', async () => {
    // Arrange
    const before = await jobCount();

    // Act
    const response = await stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...auth(KEYS.operator), 'idempotency-key': randomUUID() },
      payload: { operation: 'support.reply', input },
    });

    // Assert
    expect(response.statusCode).toBe(403);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json().type).toMatch(/\/forbidden$/);
    expect(await jobCount()).toBe(before);
  });

  it("reads any tenant's job by id", async () => {
    // Arrange
    const jobId = await aliceJob();

    // Act
    const response = await stack.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: auth(KEYS.operator) });

    // Assert
    expect(response.statusCode).toBe(200);
    expect(response.json().id).toBe(jobId);
  });

  it("cancels any tenant's job, and the job's events say which operator did it", async () => {
    // Arrange
    const jobId = await aliceJob();

    // Act
    const response = await stack.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/cancel`, headers: auth(KEYS.operator), payload: { reason: 'customer called' } });

    // Assert
    expect(response.statusCode).toBe(200);
    expect(response.json().status).toBe('cancelled');
    const cancelled = response.json().events.find((event: { type: string }) => event.type === 'job.cancelled');
    expect(cancelled.detail).toEqual({ by: expect.stringMatching(/^operator:[0-9a-f]{8}$/), reason: 'customer called' });
  });

  it('resolves an unknown attempt, and a tenant may not', async () => {
    // Arrange
    const jobId = await aliceJob();
    const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('no attempt');
    await stack.db.pool.query(`UPDATE attempts SET status = 'unknown' WHERE id = $1`, [opened.attempt.id]);
    const resolve = (key: string) =>
      stack.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/attempts/${opened.attempt.id}/resolution`, headers: auth(key), payload: { outcome: 'failed', reason: 'checked the provider' } });

    // Act
    const byTenant = await resolve(KEYS.alice);
    const byOperator = await resolve(KEYS.operator);

    // Assert
    expect(byTenant.statusCode).toBe(403);
    expect(byOperator.statusCode).toBe(200);
    expect(byOperator.json().attempts[0].resolution.by).toMatch(/^operator:/);
  });

  it('settles an effect in review, and a tenant may not', async () => {
    // Arrange
    const jobId = await aliceJob();
    const winner = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (winner.kind !== 'opened') throw new Error('no attempt');
    await markAttemptRunning(stack.db.pool, winner.attempt.id);
    await commitAttemptResult(stack.db.pool, winner.attempt.id, { reply: 'ok', escalate: false }, { terminal: false });
    await claimEffect(stack.db.pool, { jobId, name: 'message.send', owner: 'test', leaseMs: 60_000 });
    await stack.db.pool.query(`UPDATE effects SET status = 'needs_review', settled_at = now() WHERE job_id = $1`, [jobId]);
    const settle = (key: string) =>
      stack.app.inject({
        method: 'POST',
        url: `/v1/jobs/${jobId}/effects/message.send/resolution`,
        headers: auth(key),
        payload: { outcome: 'succeeded', reason: 'found it downstream', receipt: { messageId: 'm-1' } },
      });

    // Act
    const byTenant = await settle(KEYS.alice);
    const byOperator = await settle(KEYS.operator);

    // Assert
    expect(byTenant.statusCode).toBe(403);
    expect(byOperator.statusCode).toBe(200);
    expect(byOperator.json().effects[0]).toMatchObject({ status: 'succeeded', receipt: { messageId: 'm-1' }, resolution: { by: expect.stringMatching(/^operator:/) } });
  });

  it('settles an effect as succeeded only with the receipt found downstream: without one, a 400, and it stays in review', async () => {
    // Arrange
    const jobId = await aliceJob();
    const winner = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (winner.kind !== 'opened') throw new Error('no attempt');
    await markAttemptRunning(stack.db.pool, winner.attempt.id);
    await commitAttemptResult(stack.db.pool, winner.attempt.id, { reply: 'ok', escalate: false }, { terminal: false });
    await claimEffect(stack.db.pool, { jobId, name: 'message.send', owner: 'test', leaseMs: 60_000 });
    await stack.db.pool.query(`UPDATE effects SET status = 'needs_review', settled_at = now() WHERE job_id = $1`, [jobId]);
    const settle = (receipt?: unknown) =>
      stack.app.inject({
        method: 'POST',
        url: `/v1/jobs/${jobId}/effects/message.send/resolution`,
        headers: auth(KEYS.operator),
        payload: { outcome: 'succeeded', reason: 'it went out', ...(receipt === undefined ? {} : { receipt }) },
      });

    // Act
    const without = await settle();
    const empty = await settle({});

    // Assert
    for (const response of [without, empty]) {
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ errors: [expect.objectContaining({ pointer: '/receipt' })] });
    }
    const job = (await stack.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: auth(KEYS.operator) })).json();
    expect(job.effects[0].status).toBe('needs_review');
  });

  it('sees providers, and a tenant may not', async () => {
    // Act
    const byTenant = await stack.app.inject({ method: 'GET', url: '/v1/providers', headers: auth(KEYS.alice) });
    const byOperator = await stack.app.inject({ method: 'GET', url: '/v1/providers', headers: auth(KEYS.operator) });

    // Assert
    expect(byTenant.statusCode).toBe(403);
    expect(byOperator.statusCode).toBe(200);
    expect(byOperator.json().providers.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['sim-primary', 'sim-backup']));
  });

  it('finds no job by scope: an operator has no scope of its own', async () => {
    // Arrange
    const key = randomUUID();
    await submitReply(stack, { message: 'mine', key });

    // Act
    const response = await stack.app.inject({ method: 'GET', url: `/v1/jobs?operation=support.reply&idempotencyKey=${key}`, headers: auth(KEYS.operator) });

    // Assert
    expect(response.statusCode).toBe(404);
  });
});

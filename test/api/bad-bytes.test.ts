import { randomUUID } from 'node:crypto';
import { claimEffect } from '../../src/ledger/effects';
import { commitAttemptResult, markAttemptRunning, openAttempt } from '../../src/ledger/attempts';
import { auth, KEYS, startTestStack, submitReply, type TestStack } from '../harness/stack';

/**
 * Which strings Onceflow accepts is decided once, at the edge: no NUL and no
 * lone surrogate, anywhere a string could reach the database. Each is a 400
 * naming the field, never a 500 that a client would retry.
 */
describe('strings Onceflow does not accept', () => {
  let stack: TestStack;
  let jobId: string;
  let unknownAttemptId: string;
  let reviewJobId: string;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    jobId = (await submitReply(stack, { message: 'bad bytes', key: randomUUID() })).json().id;
    const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('no attempt');
    unknownAttemptId = opened.attempt.id;
    await stack.db.pool.query(`UPDATE attempts SET status = 'unknown' WHERE id = $1`, [unknownAttemptId]);

    // A job whose message.send waits for an operator.
    reviewJobId = (await submitReply(stack, { message: 'review me', key: randomUUID() })).json().id;
    const winner = await openAttempt(stack.db.pool, { jobId: reviewJobId, provider: 'sim-primary', model: 'sim-small' });
    if (winner.kind !== 'opened') throw new Error('no attempt');
    await markAttemptRunning(stack.db.pool, winner.attempt.id);
    await commitAttemptResult(stack.db.pool, winner.attempt.id, { reply: 'ok', escalate: false }, { terminal: false });
    await claimEffect(stack.db.pool, { jobId: reviewJobId, name: 'message.send', owner: 'test', leaseMs: 60_000 });
    await stack.db.pool.query(`UPDATE effects SET status = 'needs_review', settled_at = now() WHERE job_id = $1`, [reviewJobId]);
  });
  afterAll(() => stack.close());

  const NUL = '\u0000';
  const LONE_HIGH = '\ud800';
  const LONE_LOW = '\udc00';
  const input = { ticketId: 'T-1', customerMessage: 'Hello', channel: 'chat' };

  /** JSON text with the string escaped as JSON writes it (\u0000, \ud800): what a client sends. */
  const json = (value: unknown): string => JSON.stringify(value);

  type Case = { name: string; method: 'GET' | 'POST'; url: () => string; key?: string; apiKey?: string; payload?: unknown; pointer: string };
  const cases: Case[] = [
    { name: 'NUL in an input value', method: 'POST', url: () => '/v1/jobs', payload: { operation: 'support.reply', input: { ...input, customerMessage: `a${NUL}b` } }, pointer: '/input/customerMessage' },
    { name: 'a lone high surrogate in an input value', method: 'POST', url: () => '/v1/jobs', payload: { operation: 'support.reply', input: { ...input, customerMessage: `a${LONE_HIGH}` } }, pointer: '/input/customerMessage' },
    { name: 'a lone low surrogate in an input value', method: 'POST', url: () => '/v1/jobs', payload: { operation: 'support.reply', input: { ...input, ticketId: `${LONE_LOW}T` } }, pointer: '/input/ticketId' },
    { name: 'NUL in an input key', method: 'POST', url: () => '/v1/jobs', payload: { operation: 'support.reply', input: { ...input, [`x${NUL}`]: 1 } }, pointer: `/input/x${NUL}` },
    { name: 'NUL deep inside the input', method: 'POST', url: () => '/v1/jobs', payload: { operation: 'support.reply', input: { ...input, extra: { list: [1, { deep: NUL }] } } }, pointer: '/input/extra/list/1/deep' },
    { name: 'NUL in the operation', method: 'POST', url: () => '/v1/jobs', payload: { operation: `support.reply${NUL}`, input }, pointer: '/operation' },
    { name: 'NUL in a cancel reason', method: 'POST', url: () => `/v1/jobs/${jobId}/cancel`, payload: { reason: `why${NUL}` }, pointer: '/reason' },
    { name: 'a lone surrogate in a cancel reason', method: 'POST', url: () => `/v1/jobs/${jobId}/cancel`, payload: { reason: `why${LONE_HIGH}` }, pointer: '/reason' },
    {
      name: 'NUL in an attempt resolution reason',
      method: 'POST',
      url: () => `/v1/jobs/${jobId}/attempts/${unknownAttemptId}/resolution`,
      apiKey: KEYS.operator,
      payload: { outcome: 'failed', reason: `checked${NUL}` },
      pointer: '/reason',
    },
    {
      name: 'a lone surrogate in an effect resolution reason',
      method: 'POST',
      url: () => `/v1/jobs/${reviewJobId}/effects/message.send/resolution`,
      apiKey: KEYS.operator,
      payload: { outcome: 'failed', reason: `checked${LONE_LOW}` },
      pointer: '/reason',
    },
    {
      name: 'NUL in an effect resolution receipt',
      method: 'POST',
      url: () => `/v1/jobs/${reviewJobId}/effects/message.send/resolution`,
      apiKey: KEYS.operator,
      payload: { outcome: 'succeeded', reason: 'found it', receipt: { messageId: `m${NUL}` } },
      pointer: '/receipt/messageId',
    },
    {
      name: 'NUL in a receipt key',
      method: 'POST',
      url: () => `/v1/jobs/${reviewJobId}/effects/message.send/resolution`,
      apiKey: KEYS.operator,
      payload: { outcome: 'succeeded', reason: 'found it', receipt: { [NUL]: 'm-1' } },
      pointer: `/receipt/${NUL}`,
    },
    { name: 'NUL in the operation query parameter', method: 'GET', url: () => `/v1/jobs?operation=%00&idempotencyKey=k`, pointer: '/operation' },
    { name: 'NUL in the idempotencyKey query parameter', method: 'GET', url: () => `/v1/jobs?operation=support.reply&idempotencyKey=a%00b`, pointer: '/idempotencyKey' },
    { name: 'NUL in an effect name path parameter', method: 'POST', url: () => `/v1/jobs/${reviewJobId}/effects/%00/resolution`, apiKey: KEYS.operator, payload: { outcome: 'failed', reason: 'x' }, pointer: '/name' },
  ];

  it.each(cases)('answers $name with 400 problem+json naming $pointer', async ({ method, url, apiKey, payload, pointer }) => {
    // Act
    const response = await stack.app.inject({
      method,
      url: url(),
      headers: { ...auth(apiKey ?? KEYS.alice), 'idempotency-key': randomUUID(), ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(payload === undefined ? {} : { payload: json(payload) }),
    });

    // Assert
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = response.json();
    expect(problem.type).toMatch(/\/validation$/);
    expect(problem.errors).toContainEqual({ pointer, detail: expect.stringMatching(/U\+0000|lone surrogate/) });
    expect(problem.detail).not.toMatch(/retry/i);
  });

  it('answers NUL in the Idempotency-Key header with 400, not a job', async () => {
    // Act
    const response = await stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...auth(KEYS.alice), 'idempotency-key': `a${NUL}b` },
      payload: { operation: 'support.reply', input },
    });

    // Assert
    expect(response.statusCode).toBe(400);
    expect(response.json().type).toMatch(/invalid-idempotency-key$/);
  });

  it('leaves the job, its attempt and its effect untouched after refused bytes', async () => {
    // Arrange
    const before = await stack.db.pool.query('SELECT status, version FROM jobs WHERE id = ANY($1) ORDER BY id', [[jobId, reviewJobId]]);

    // Act
    for (const { method, url, apiKey, payload } of cases.filter((c) => c.url().includes(jobId) || c.url().includes(reviewJobId))) {
      await stack.app.inject({ method, url: url(), headers: { ...auth(apiKey ?? KEYS.alice), 'content-type': 'application/json' }, payload: json(payload) });
    }

    // Assert
    const after = await stack.db.pool.query('SELECT status, version FROM jobs WHERE id = ANY($1) ORDER BY id', [[jobId, reviewJobId]]);
    expect(after.rows).toEqual(before.rows);
    const attempt = await stack.db.pool.query('SELECT status FROM attempts WHERE id = $1', [unknownAttemptId]);
    expect(attempt.rows[0].status).toBe('unknown');
    const effect = await stack.db.pool.query('SELECT status FROM effects WHERE job_id = $1', [reviewJobId]);
    expect(effect.rows[0].status).toBe('needs_review');
  });

  it('accepts characters beyond the basic plane written as surrogate pairs', async () => {
    // Act
    const response = await stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...auth(KEYS.alice), 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
      payload: json({ operation: 'support.reply', input: { ...input, customerMessage: 'Thanks 👍 \ud83d\ude00' } }),
    });

    // Assert
    expect(response.statusCode).toBe(202);
  });
});

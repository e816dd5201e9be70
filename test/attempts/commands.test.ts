import { randomUUID } from 'node:crypto';
import { openAttempt } from '../../src/ledger/attempts';
import { auth, isTerminalJob, KEYS, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';

describe('resolution and cancellation endpoints', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

  const resolve = (jobId: string, attemptId: string, key: string, payload: object = { outcome: 'failed', reason: 'checked with the provider' }) =>
    stack.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/attempts/${attemptId}/resolution`, headers: auth(key), payload });
  const cancel = (jobId: string, key: string) => stack.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/cancel`, headers: auth(key), payload: {} });

  async function jobWithAttempt(status: 'running' | 'unknown') {
    const job = (await submitReply(stack, { message: 'x', key: randomUUID() })).json();
    const opened = await openAttempt(stack.db.pool, { jobId: job.id, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('no attempt');
    await stack.db.pool.query('UPDATE attempts SET status = $2 WHERE id = $1', [opened.attempt.id, status]);
    return { jobId: job.id as string, attemptId: opened.attempt.id };
  }

  it('lets only operators resolve an attempt (403 for a principal, even its own job)', async () => {
    const { jobId, attemptId } = await jobWithAttempt('unknown');
    const response = await resolve(jobId, attemptId, KEYS.alice);
    expect(response.statusCode).toBe(403);
    expect(response.json().type).toMatch(/forbidden$/);
  });

  it('answers 409 when the attempt is not unknown', async () => {
    const { jobId, attemptId } = await jobWithAttempt('running');
    const response = await resolve(jobId, attemptId, KEYS.operator);
    expect(response.statusCode).toBe(409);
    expect(response.json().type).toMatch(/attempt-not-unknown$/);
  });

  it('answers 404 for an attempt of another job', async () => {
    const one = await jobWithAttempt('unknown');
    const other = await jobWithAttempt('unknown');
    expect((await resolve(one.jobId, other.attemptId, KEYS.operator)).statusCode).toBe(404);
  });

  it('answers 400 for a resolution without a reason or with another outcome', async () => {
    const { jobId, attemptId } = await jobWithAttempt('unknown');
    expect((await resolve(jobId, attemptId, KEYS.operator, { outcome: 'failed' })).statusCode).toBe(400);
    expect((await resolve(jobId, attemptId, KEYS.operator, { outcome: 'succeeded', reason: 'x' })).statusCode).toBe(400);
  });

  it('records who resolved, why, and moves the job back to running', async () => {
    const { jobId, attemptId } = await jobWithAttempt('unknown');
    const response = await resolve(jobId, attemptId, KEYS.operator);
    expect(response.statusCode).toBe(200);
    const job = response.json();
    expect(job.attempts[0]).toMatchObject({ status: 'failed', resolution: { outcome: 'failed', reason: 'checked with the provider', by: expect.stringMatching(/^operator:/) } });
    expect(job.events.map((e: any) => e.type)).toContain('attempt.resolved');
  });

  it("cancels a job that is not terminal, and answers 404 for another principal's job and 409 for a terminal one", async () => {
    // Arrange
    const job = (await submitReply(stack, { message: 'cancel me', key: randomUUID() })).json();

    // Act
    const byBob = await cancel(job.id, KEYS.bob);
    const byAlice = await cancel(job.id, KEYS.alice);
    const again = await cancel(job.id, KEYS.alice);

    // Assert
    expect(byBob.statusCode).toBe(404);
    expect(byAlice.statusCode).toBe(200);
    expect(byAlice.json()).toMatchObject({ status: 'cancelled' });
    expect(again.statusCode).toBe(409);
  });

  it('lets a cancelled job end its workflow without starting an attempt', async () => {
    // Arrange
    const job = (await submitReply(stack, { message: 'never run', key: randomUUID() })).json();
    await cancel(job.id, KEYS.alice);

    // Act
    await stack.startWorker();
    const result = await stack.temporal.client.workflow.getHandle(job.workflowId).result();

    // Assert
    expect(result).toBe('cancelled');
    const done = await waitForJob(stack, job.id, isTerminalJob);
    expect(done.attempts).toHaveLength(0);
    await stack.stopWorker();
  });
});

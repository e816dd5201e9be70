import { randomUUID } from 'node:crypto';
import { listAttempts, openFirstAttempt } from '../../src/ledger/attempts';
import { admitJob, type JobRecord } from '../../src/ledger/jobs';
import { createTestDatabase, type TestDatabase } from '../harness/database';

const DIGEST = `sha256:${'a'.repeat(64)}`;

/**
 * A new job's first attempt opened the short way (ledger_open_first_attempt):
 * the worker decided on a job it read without a lock, so the call that locks
 * the row opens the attempt only while everything that decision read still
 * holds. Each case below is one clause of that check.
 */
describe('openFirstAttempt, the check on the locked job row', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  async function newJob(opts: { routeVersion?: string; deadlineInMs?: number } = {}): Promise<JobRecord> {
    const { job } = await admitJob(db.pool, {
      principalId: 'alice',
      operation: 'support.reply',
      idempotencyKey: randomUUID(),
      requestDigest: DIGEST,
      schemaVersion: 1,
      input: { message: 'hi' },
      workflowId: `wf-${randomUUID()}`,
      ...(opts.routeVersion ? { routeVersion: opts.routeVersion } : {}),
      ...(opts.deadlineInMs !== undefined ? { deadlineAt: new Date(Date.now() + opts.deadlineInMs) } : {}),
    });
    return job;
  }

  const open = (job: JobRecord, overrides: Partial<Parameters<typeof openFirstAttempt>[1]> = {}) =>
    openFirstAttempt(db.pool, { jobId: job.id, attemptId: randomUUID(), workflowId: job.workflowId, routeVersion: 'v1', provider: 'sim-primary', model: 'sim-small', minAttemptMs: 500, send: false, ...overrides });

  it("opens attempt 1 of a new job, starting, and moves the job to running with the events a long way's opening writes", async () => {
    // Arrange
    const job = await newJob({ routeVersion: 'v1', deadlineInMs: 60_000 });
    const attemptId = randomUUID();

    // Act
    const opened = await open(job, { attemptId });

    // Assert
    expect(opened?.attempt).toMatchObject({ id: attemptId, jobId: job.id, seq: 1, lane: 0, run: 1, status: 'starting', provider: 'sim-primary', model: 'sim-small' });
    expect(opened!.deadlineLeftMs).toBeGreaterThan(50_000);
    expect(opened!.deadlineLeftMs).toBeLessThanOrEqual(60_000);
    const { rows } = await db.pool.query('SELECT status FROM jobs WHERE id = $1', [job.id]);
    expect(rows[0].status).toBe('running');
    const events = await db.pool.query('SELECT type FROM job_events WHERE job_id = $1 ORDER BY id', [job.id]);
    expect(events.rows.map((row) => row.type)).toEqual(['job.created', 'job.running', 'attempt.opened']);
  });

  it('opens it marked sent (running) when its request goes out next, in the same call', async () => {
    // Arrange
    const job = await newJob({ routeVersion: 'v1' });

    // Act
    const opened = await open(job, { send: true });

    // Assert: what the ledger holds says the request may have gone out, before it does.
    expect(opened?.attempt).toMatchObject({ seq: 1, status: 'running' });
    expect((await listAttempts(db.pool, job.id)).map((attempt) => attempt.status)).toEqual(['running']);
  });

  it('opens one for a job without a deadline or a recorded route version', async () => {
    const job = await newJob();
    const opened = await open(job, { routeVersion: null });
    expect(opened).toMatchObject({ attempt: { seq: 1, status: 'starting' }, deadlineLeftMs: null });
  });

  it('opens nothing once the job has an attempt (it is no longer accepted): the same step retried takes the long way', async () => {
    // Arrange
    const job = await newJob({ routeVersion: 'v1' });
    await open(job);

    // Act
    const again = await open(job);

    // Assert
    expect(again).toBeUndefined();
    expect(await listAttempts(db.pool, job.id)).toHaveLength(1);
  });

  it.each([
    ['cancelled', `UPDATE jobs SET status = 'cancelled', terminal_at = now() WHERE id = $1`],
    ['reopened on its second run', `UPDATE jobs SET run = 2 WHERE id = $1`],
  ])('opens nothing for a job %s since it was read', async (_, change) => {
    // Arrange
    const job = await newJob({ routeVersion: 'v1' });
    await db.pool.query(change, [job.id]);

    // Act
    const opened = await open(job);

    // Assert
    expect(opened).toBeUndefined();
    expect(await listAttempts(db.pool, job.id)).toEqual([]);
  });

  it("opens nothing for another run's workflow", async () => {
    const job = await newJob({ routeVersion: 'v1' });
    expect(await open(job, { workflowId: `${job.workflowId}-run-2` })).toBeUndefined();
    expect(await listAttempts(db.pool, job.id)).toEqual([]);
  });

  it('opens nothing on another route version than the one the step was chosen from', async () => {
    const job = await newJob({ routeVersion: 'v1' });
    expect(await open(job, { routeVersion: 'v2' })).toBeUndefined();
    expect(await open(job, { routeVersion: null })).toBeUndefined();
    expect(await listAttempts(db.pool, job.id)).toEqual([]);
  });

  it("opens nothing with less than one attempt's time left before the deadline", async () => {
    const job = await newJob({ routeVersion: 'v1', deadlineInMs: 300 });
    expect(await open(job, { minAttemptMs: 500 })).toBeUndefined();
    expect(await listAttempts(db.pool, job.id)).toEqual([]);
  });
});

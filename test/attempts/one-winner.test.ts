import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../src/activities';
import { createRegistry } from '../../src/operations/registry';
import { loadConfig } from '../../src/config';
import { buildActivityDeps } from '../../src/worker/activity-deps';
import { listAttempts, markAttemptUnknown, openAttempt, resolveAttempt } from '../../src/ledger/attempts';
import { until } from '../harness/poll';
import { auth, isTerminalJob, KEYS, readJob, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';

describe('one winner (invariants 3 and 5)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());
  // Tests that start the worker leave none running for the next, which drives attempts by hand.
  afterEach(() => stack.stopWorker());

  const activities = () =>
    createActivities(
      buildActivityDeps({
        db: stack.db.pool,
        metrics: stack.metrics,
        config: loadConfig({ ONCEFLOW_ATTEMPT_TIMEOUT_MS: '10000', ONCEFLOW_MESSAGES_URL: stack.sims.downstream.url }),
        operations: createRegistry(),
        providers: stack.providers,
        routeFor: () => [],
      }),
    );

  it('rejects a second live attempt in the database, even when inserted directly', async () => {
    // Arrange
    const job = (await submitReply(stack, { message: 'direct' })).json();
    const first = await openAttempt(stack.db.pool, { jobId: job.id, provider: 'sim-primary', model: 'sim-small' });
    expect(first.kind).toBe('opened');

    // Act
    const direct = stack.db.pool.query(`INSERT INTO attempts (job_id, operation, seq, provider, model, job_version) VALUES ($1, 'support.reply', 99, 'sim-backup', 'x', 0)`, [job.id]);
    const viaLedger = await openAttempt(stack.db.pool, { jobId: job.id, provider: 'sim-backup', model: 'sim-large' });

    // Assert
    await expect(direct).rejects.toMatchObject({ code: '23505', constraint: 'attempts_one_live_per_lane' });
    expect(viaLedger).toMatchObject({ kind: 'live', attempt: { id: first.kind === 'opened' ? first.attempt.id : '' } });
    expect(await listAttempts(stack.db.pool, job.id)).toHaveLength(1);
  });

  it('opens exactly one of many attempts raced at once', async () => {
    // Arrange
    const job = (await submitReply(stack, { message: 'race' })).json();

    // Act
    const results = await Promise.all(Array.from({ length: 12 }, () => openAttempt(stack.db.pool, { jobId: job.id, provider: 'sim-primary', model: 'sim-small' })));

    // Assert
    expect(results.filter((r) => r.kind === 'opened')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'live')).toHaveLength(11);
  });

  it('returns the attempt it opened to a retried open, so a retry never mistakes its own attempt for another live one', async () => {
    // Arrange
    const job = (await submitReply(stack, { message: 'retried open' })).json();
    const attemptId = randomUUID();

    // Act: the open commits, its answer is lost, and the step runs again with the same id.
    const first = await openAttempt(stack.db.pool, { jobId: job.id, provider: 'sim-primary', model: 'sim-small', attemptId });
    const retried = await openAttempt(stack.db.pool, { jobId: job.id, provider: 'sim-primary', model: 'sim-small', attemptId });

    // Assert
    expect(first).toMatchObject({ kind: 'opened', attempt: { id: attemptId, status: 'starting' } });
    expect(retried).toMatchObject({ kind: 'opened', attempt: { id: attemptId, status: 'starting' } });
    expect(await listAttempts(stack.db.pool, job.id)).toHaveLength(1);
  });

  it("keeps B's result when A, resolved out of band, answers after B won; A keeps its resolution and its late answer is recorded", async () => {
    // Arrange: the job's workflow waits for a worker; attempt A goes out first and answers late (8 s, long after B).
    const submitted = await submitReply(stack, { message: 'Hi @sim(sim-primary:delay=8000)' });
    const jobId = submitted.json().id;
    const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('attempt A did not open');
    const attemptA = opened.attempt.id;
    // A's provider call runs as a real activity, outside the workflow: the zombie that outlived Temporal's timeout.
    const zombie = new MockActivityEnvironment().run(activities().callProvider, attemptA);
    await until(() => stack.sims.primary.requests().some((r) => r.requestId === attemptA));
    await markAttemptUnknown(stack.db.pool, attemptA, { class: 'worker_lost', detail: 'Temporal gave up on the activity' });

    // Act 1: an operator resolves A; the workflow then runs B on the backup, which wins.
    const resolved = await stack.app.inject({
      method: 'POST',
      url: `/v1/jobs/${jobId}/attempts/${attemptA}/resolution`,
      headers: auth(KEYS.operator),
      payload: { outcome: 'failed', reason: 'failing over; A is presumed lost' },
    });
    expect(resolved.statusCode).toBe(200);
    await stack.startWorker();
    const won = await waitForJob(stack, jobId, isTerminalJob);

    // Act 2: A's answer finally arrives.
    const late = await zombie;

    // Assert
    expect(won.status).toBe('succeeded');
    expect(late).toMatchObject({ status: 'failed', jobTerminal: true });
    const job = await readJob(stack, jobId);
    expect(job.result.reply).toContain('sim-backup');
    const [a, b] = job.attempts;
    expect(b).toMatchObject({ provider: 'sim-backup', status: 'succeeded' });
    expect(a).toMatchObject({ id: attemptA, provider: 'sim-primary', status: 'failed', resolution: { outcome: 'failed', reason: 'failing over; A is presumed lost' } });
    expect(a.evidence.lateAnswer).toMatchObject({ winner: b.id, outputSha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const race = job.events.find((e: any) => e.type === 'attempt.race_lost');
    expect(race.detail).toMatchObject({ attemptId: attemptA, winner: b.id, jobStatus: 'succeeded', statusWhenDiscarded: 'failed' });
    const completedBy = await stack.db.pool.query('SELECT completed_by FROM jobs WHERE id = $1', [jobId]);
    expect(completedBy.rows[0].completed_by).toBe(b.id);
    expect((await stack.metrics.lateResultsDiscarded.get()).values).toEqual([expect.objectContaining({ labels: { operation: 'support.reply', provider: 'sim-primary' }, value: 1 })]);
  }, 30_000);

  it('never lets an attempt resolved by an operator win with its late answer, even before another attempt opened', async () => {
    // Arrange: A goes out, is given up on (unknown), and an operator resolves it as failed.
    const submitted = await submitReply(stack, { message: 'Hi @sim(sim-primary:delay=1500)', key: randomUUID() });
    const jobId = submitted.json().id;
    const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('no attempt');
    const zombie = new MockActivityEnvironment().run(activities().callProvider, opened.attempt.id) as Promise<{ status: string; jobTerminal: boolean }>;
    await until(() => stack.sims.primary.requests().some((r) => r.requestId === opened.attempt.id));
    await markAttemptUnknown(stack.db.pool, opened.attempt.id, { class: 'worker_lost', detail: 'Temporal gave up on the activity' });
    await resolveAttempt(stack.db.pool, { jobId, attemptId: opened.attempt.id, outcome: 'failed', reason: 'presumed lost', by: 'operator:test' });

    // Act: its answer arrives while the job has no winner at all.
    const late = await zombie;

    // Assert: the slot stays empty, the resolution stands, and the answer is only evidence.
    expect(late).toMatchObject({ status: 'failed', jobTerminal: false });
    const { rows } = await stack.db.pool.query('SELECT completed_by, status, output FROM jobs WHERE id = $1', [jobId]);
    expect(rows[0]).toMatchObject({ completed_by: null, status: 'running', output: null });
    const [attempt] = await listAttempts(stack.db.pool, jobId);
    expect(attempt).toMatchObject({ status: 'failed', resolution: { outcome: 'failed', by: 'operator:test' }, evidence: { lateAnswer: { winner: null } } });
  });

  it('discards the result of an attempt that answers after its job was cancelled', async () => {
    // Arrange
    const submitted = await submitReply(stack, { message: 'Hi @sim(sim-primary:delay=1500)', key: randomUUID() });
    const jobId = submitted.json().id;
    const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('no attempt');
    const inFlight = new MockActivityEnvironment().run(activities().callProvider, opened.attempt.id) as Promise<{ status: string }>;
    await until(() => stack.sims.primary.requests().some((r) => r.requestId === opened.attempt.id));

    // Act
    const cancelled = await stack.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/cancel`, headers: auth(KEYS.alice), payload: { reason: 'user changed their mind' } });
    const late = await inFlight;

    // Assert
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.json().status).toBe('cancelled');
    expect(late.status).toBe('discarded');
    const job = await readJob(stack, jobId);
    expect(job.status).toBe('cancelled');
    expect(job.result).toBeUndefined();
    expect(job.attempts[0].status).toBe('discarded');
  });
});

import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../src/activities';
import { createRegistry } from '../../src/operations/registry';
import { loadConfig } from '../../src/config';
import { buildActivityDeps } from '../../src/worker/activity-deps';
import { listAttempts, markAttemptUnknown, openAttempt } from '../../src/ledger/attempts';
import { until } from '../harness/worker-process';
import { auth, isTerminalJob, KEYS, readJob, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';

describe('one winner (invariants 3 and 5)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

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
    const direct = stack.db.pool.query(`INSERT INTO attempts (job_id, seq, provider, model, job_version) VALUES ($1, 99, 'sim-backup', 'x', 0)`, [job.id]);
    const viaLedger = await openAttempt(stack.db.pool, { jobId: job.id, provider: 'sim-backup', model: 'sim-large' });

    // Assert
    await expect(direct).rejects.toMatchObject({ code: '23505', constraint: 'attempts_one_live_per_job' });
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

  it("keeps B's result when A, resolved out of band, answers after B won; A's late result is discarded and the race recorded", async () => {
    // Arrange: the job's workflow waits for a worker; attempt A goes out first and answers late (3 s).
    const submitted = await submitReply(stack, { message: 'Hi @sim(sim-primary:delay=3000)' });
    const jobId = submitted.json().id;
    const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('attempt A did not open');
    const attemptA = opened.attempt.id;
    // A's provider call runs as a real activity, outside the workflow: the zombie that outlived Temporal's timeout.
    stack.app.log.level = 'silent';
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
    expect(late).toMatchObject({ status: 'discarded', jobTerminal: true });
    const job = await readJob(stack, jobId);
    expect(job.result.reply).toContain('sim-backup');
    const [a, b] = job.attempts;
    expect(a).toMatchObject({ id: attemptA, provider: 'sim-primary', status: 'discarded', resolution: { outcome: 'failed' } });
    expect(b).toMatchObject({ provider: 'sim-backup', status: 'succeeded' });
    expect(a.evidence.winner).toBe(b.id);
    const race = job.events.find((e: any) => e.type === 'attempt.race_lost');
    expect(race.detail).toMatchObject({ attemptId: attemptA, winner: b.id, jobStatus: 'succeeded' });
    const completedBy = await stack.db.pool.query('SELECT completed_by FROM jobs WHERE id = $1', [jobId]);
    expect(completedBy.rows[0].completed_by).toBe(b.id);
    expect(await stack.metrics.lateResultsDiscarded.get()).toMatchObject({ values: [expect.objectContaining({ value: 1 })] });
    await stack.stopWorker();
  }, 30_000);

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

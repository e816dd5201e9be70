import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { AttemptStatus, failAttempt, getAttempt, listAttempts, markAttemptRunning, markAttemptUnknown, openAttempt, resolveAttempt } from '../../src/ledger/attempts';
import { interceptQueries, onStatements, pause } from '../harness/db-faults';
import { gateLookups } from '../harness/gated-provider';
import { auth, isTerminalJob, KEYS, readJob, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';
import { until } from '../harness/poll';
import { admitJob } from '../../src/ledger/jobs';
import { requestDigest } from '../../src/jobs/digest';
import { jobWorkflowId } from '../../src/jobs/scope';
import { JOB_WORKFLOW, type JobWorkflowInput } from '../../src/temporal/contract';

const jobAttempts = (job: { attempts: Array<{ provider: string; status: string }> }) => job.attempts.map((a) => [a.provider, a.status]);

describe('an operator resolution racing a reconciliation', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

  it('keeps the resolution that lands during a provider lookup, and the job goes on to its next attempt instead of being left without a workflow', async () => {
    // Arrange: the primary completes 3 s after the request, past the 2 s attempt timeout; its next lookup is held.
    const gated = gateLookups(stack.providers.get('sim-primary')!);
    stack.providers.set('sim-primary', gated);
    await stack.startWorker();
    const jobId = (await submitReply(stack, { message: 'Hi @sim(sim-primary:late=3000)' })).json().id;
    const attemptId = await gated.lookupHeld();

    // Act: an operator resolves it as failed while the lookup is out; the lookup then comes back "completed".
    const resolved = await stack.app.inject({
      method: 'POST',
      url: `/v1/jobs/${jobId}/attempts/${attemptId}/resolution`,
      headers: auth(KEYS.operator),
      payload: { outcome: 'failed', reason: 'the provider says it dropped it' },
    });
    await until(() => stack.sims.primary.requests().some((r) => r.requestId === attemptId && r.status === 'completed'));
    gated.release();
    const job = await waitForJob(stack, jobId, isTerminalJob, 20_000);

    // Assert
    expect(resolved.statusCode).toBe(200);
    expect(job.status).toBe('succeeded');
    expect(jobAttempts(job)).toEqual([
      ['sim-primary', 'failed'],
      ['sim-backup', 'succeeded'],
    ]);
    expect(job.attempts[0]).toMatchObject({ id: attemptId, resolution: { outcome: 'failed', reason: 'the provider says it dropped it' }, evidence: { lateAnswer: { outputSha256: expect.any(String) } } });
    expect(await stack.temporal.client.workflow.getHandle(job.workflowId).result()).toBe('succeeded');
  }, 40_000);
});

describe('a live worker slow before it sends', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // The worker's first read of a job's input takes 2.5 s, well past the 1 s heartbeat timeout.
    stack = await startTestStack({ activityDb: (pool) => interceptQueries(pool, onStatements(/SELECT input FROM jobs/, 1, pause(2_500))) });
  });
  afterAll(() => stack.close());

  it('is not taken for a lost one: its attempt is sent once and no second attempt starts', async () => {
    // Act
    const jobId = (await submitReply(stack, { message: 'Where is my parcel?' })).json().id;
    const job = await waitForJob(stack, jobId, isTerminalJob, 20_000);

    // Assert
    expect(job.status).toBe('succeeded');
    expect(jobAttempts(job)).toEqual([['sim-primary', 'succeeded']]);
    expect(stack.sims.backup.requests().filter((r) => !r.requestId.startsWith('verify-'))).toHaveLength(0);
  }, 30_000);
});

describe('a live worker slow before it sends, in a run of revision 1 (started before revision 2)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // The call's first read (the attempt and its job's input) takes 2.5 s, past the 1 s heartbeat timeout.
    stack = await startTestStack({ activityDb: (pool) => interceptQueries(pool, onStatements(/j\.input AS job_input/, 1, pause(2_500))) });
  });
  afterAll(() => stack.close());

  it('is not taken for a lost one: the call, an activity of its own in revision 1, heartbeats from its first line', async () => {
    // Arrange: a job whose workflow was started by a release before revision 2 (no revision in its input).
    const scope = { principalId: 'alice', operation: 'support.reply', idempotencyKey: randomUUID() };
    const input = { ticketId: 'T-R1', customerMessage: 'Where is my parcel?', channel: 'email' };
    const { job } = await admitJob(stack.db.pool, { ...scope, schemaVersion: 1, input, requestDigest: requestDigest(scope.operation, 1, input), workflowId: jobWorkflowId(scope) });

    // Act
    const revisionOne: JobWorkflowInput = { jobId: job.id, searchAttributes: false };
    await stack.workflows.client.workflow.start(JOB_WORKFLOW, { taskQueue: stack.workflows.taskQueue, workflowId: job.workflowId, args: [revisionOne] });
    const done = await waitForJob(stack, job.id, isTerminalJob, 20_000);

    // Assert
    expect(done.status).toBe('succeeded');
    expect(jobAttempts(done)).toEqual([['sim-primary', 'succeeded']]);
    expect(stack.sims.primary.requests().filter((r) => !r.requestId.startsWith('verify-'))).toHaveLength(1);
    expect(stack.sims.backup.requests().filter((r) => !r.requestId.startsWith('verify-'))).toHaveLength(0);
  }, 30_000);
});

describe('attempt transitions are compare-and-swaps (invariant 12)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

  async function openFor(message: string): Promise<{ jobId: string; attemptId: string }> {
    const jobId = (await submitReply(stack, { message, key: randomUUID() })).json().id;
    const opened = await openAttempt(stack.db.pool, { jobId, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('no attempt');
    return { jobId, attemptId: opened.attempt.id };
  }

  it('never concludes "not sent" of an attempt that is already marked sent', async () => {
    // Arrange: the call marked the attempt sent just before the workflow gave up on it.
    const { attemptId } = await openFor('marked sent');
    expect(await markAttemptRunning(stack.db.pool, attemptId)).toBe(true);

    // Act: "not sent" is concluded from a stale read of `starting`.
    const failed = await failAttempt(stack.db.pool, attemptId, AttemptStatus.starting, { class: 'not_sent', detail: 'stale read' });

    // Assert
    expect(failed).toBe(false);
    expect(await getAttempt(stack.db.pool, attemptId)).toMatchObject({ status: 'running', errorClass: null });
  });

  it('never rewrites an operator resolution when a late call reports its request unknown', async () => {
    // Arrange: the attempt went out, was given up on, and an operator resolved it.
    const { jobId, attemptId } = await openFor('resolved, then reported');
    await markAttemptRunning(stack.db.pool, attemptId);
    await markAttemptUnknown(stack.db.pool, attemptId, { class: 'worker_lost', detail: 'gave up' });
    await resolveAttempt(stack.db.pool, { jobId, attemptId, outcome: 'failed', reason: 'dropped', by: 'operator:test' });

    // Act: the call that was given up on reports a timeout after all.
    const moved = await markAttemptUnknown(stack.db.pool, attemptId, { class: 'timeout', detail: 'late report' });

    // Assert
    expect(moved).toBe(false);
    expect(await getAttempt(stack.db.pool, attemptId)).toMatchObject({ status: 'failed', resolution: { outcome: 'failed', by: 'operator:test' } });
  });

  it('lets exactly one of "mark sent" and "not sent" win when they race, and never both', async () => {
    for (let round = 0; round < 20; round++) {
      // Arrange
      const { attemptId } = await openFor(`race ${round}`);

      // Act
      const [sent, notSent] = await Promise.all([
        markAttemptRunning(stack.db.pool, attemptId),
        failAttempt(stack.db.pool, attemptId, AttemptStatus.starting, { class: 'not_sent', detail: 'given up' }),
      ]);

      // Assert
      expect(sent !== notSent).toBe(true);
      expect((await getAttempt(stack.db.pool, attemptId))?.status).toBe(sent ? 'running' : 'failed');
    }
  });

  it('never marks sent an attempt already given up as not sent (the race above, in the order that loses)', async () => {
    // Arrange
    const { attemptId } = await openFor('given up first');
    expect(await failAttempt(stack.db.pool, attemptId, AttemptStatus.starting, { class: 'not_sent', detail: 'given up' })).toBe(true);

    // Act
    const sent = await markAttemptRunning(stack.db.pool, attemptId);

    // Assert
    expect(sent).toBe(false);
    expect(await getAttempt(stack.db.pool, attemptId)).toMatchObject({ status: 'failed', errorClass: 'not_sent' });
  });

  it('gives a lost attempt up as not sent and opens the next one at the current version, so the next one can win', async () => {
    // Arrange: an attempt was opened, and its call never began (its worker was lost).
    const { jobId, attemptId: lost } = await openFor('lost before sending');

    // Act: the workflow's next step, then the call it asks for.
    const step = await stack.activities.advanceJob({ jobId, attemptId: randomUUID() });
    if (step.kind !== 'call') throw new Error(`expected a call, got ${step.kind}`);
    const report = await new MockActivityEnvironment({ startToCloseTimeoutMs: 60_000 }).run(stack.activities.callProvider, step.attemptId);

    // Assert
    expect(await getAttempt(stack.db.pool, lost)).toMatchObject({ status: 'failed', errorClass: 'not_sent' });
    expect(step).toMatchObject({ provider: 'sim-backup' });
    expect(report).toMatchObject({ status: 'succeeded', jobTerminal: true, jobStatus: 'succeeded' });
    expect((await readJob(stack, jobId)).attempts.map((a: { status: string }) => a.status)).toEqual(['failed', 'succeeded']);
  });

  it('makes a lost attempt that was marked sent unknown, and opens nothing while it is', async () => {
    // Arrange
    const { jobId, attemptId } = await openFor('lost after sending');
    await markAttemptRunning(stack.db.pool, attemptId);

    // Act
    const step = await stack.activities.advanceJob({ jobId, attemptId: randomUUID() });
    const again = await stack.activities.advanceJob({ jobId, attemptId: randomUUID() });

    // Assert
    expect(step).toMatchObject({ kind: 'await', attemptId });
    expect(again).toMatchObject({ kind: 'await', attemptId });
    expect(await listAttempts(stack.db.pool, jobId)).toEqual([expect.objectContaining({ id: attemptId, status: 'unknown', errorClass: 'worker_lost' })]);
  });

  it('answers a retried step with the attempt it opened, and counts it once', async () => {
    // Arrange
    const jobId = (await submitReply(stack, { message: 'retried step', key: randomUUID() })).json().id;
    const attemptId = randomUUID();

    // Act: the step commits, its answer is lost, and it runs again with the same id.
    const first = await stack.activities.advanceJob({ jobId, attemptId });
    const retried = await stack.activities.advanceJob({ jobId, attemptId });

    // Assert
    expect(first).toMatchObject({ kind: 'call', attemptId });
    expect(retried).toMatchObject({ kind: 'call', attemptId });
    expect(await listAttempts(stack.db.pool, jobId)).toHaveLength(1);
  });
});

describe('a cancellation between the short way\'s read of a new job and the call that opens its attempt', () => {
  let stack: TestStack;
  /** The job the worker has read the short way; the cancellation lands before its opening call goes out. */
  let cancelled: Promise<number> | undefined;
  beforeAll(async () => {
    stack = await startTestStack({
      activityDb: (pool) =>
        interceptQueries(
          pool,
          onStatements(/ledger_open_first_attempt/, 1, async () => {
            const jobId = (await stack.db.pool.query<{ id: string }>(`SELECT id FROM jobs WHERE status = 'accepted' ORDER BY created_at DESC LIMIT 1`)).rows[0]!.id;
            cancelled = stack.app.inject({ method: 'POST', url: `/v1/jobs/${jobId}/cancel`, headers: auth(KEYS.alice), payload: {} }).then((response) => response.statusCode);
            await cancelled;
          }),
        ),
    });
  });
  afterAll(() => stack.close());

  it('opens nothing and sends nothing: the job stays cancelled with no attempt', async () => {
    // Act
    const jobId = (await submitReply(stack, { message: 'Cancel me before you send' })).json().id;
    const job = await waitForJob(stack, jobId, isTerminalJob, 20_000);

    // Assert
    expect(await cancelled).toBe(200);
    expect(job.status).toBe('cancelled');
    expect(job.attempts).toEqual([]);
    expect(stack.sims.primary.requests().filter((request) => request.requestId !== undefined && !request.requestId.startsWith('verify-'))).toEqual([]);
    expect(await stack.temporal.client.workflow.getHandle(job.workflowId).result()).toBe('cancelled');
  }, 30_000);
});

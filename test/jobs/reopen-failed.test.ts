import { randomUUID } from 'node:crypto';
import { createRegistry } from '../../src/operations/registry';
import { ProviderCallError, type ProviderAdapter } from '../../src/providers/types';
import { JOB_WORKFLOW, JOB_WORKFLOW_REVISION } from '../../src/temporal/contract';
import { auth, isTerminalJob, KEYS, readJob, startTestStack, waitForJob, type TestStack } from '../harness/stack';

const demo = createRegistry();
const supportReply = demo.get('support.reply')!;
const REOPENABLE = 'support.reopenable';

/**
 * The simulators stay as they are; the worker's adapters for them are swapped
 * for ones that refuse every call (provably nothing sent) while `down`, so
 * one run of a job fails with no effect and the next can succeed.
 */
function switchProviders(stack: TestStack) {
  const real = new Map(['sim-primary', 'sim-backup'].map((name) => [name, stack.providers.get(name)!]));
  const refusing = (adapter: ProviderAdapter): ProviderAdapter => ({
    name: adapter.name,
    kind: adapter.kind,
    ...(adapter.baseUrl ? { baseUrl: adapter.baseUrl } : {}),
    async complete() {
      throw new ProviderCallError({ outcome: 'failed', class: 'refused', detail: `${adapter.name} is switched off by the test` });
    },
  });
  return {
    down() {
      for (const [name, adapter] of real) stack.providers.set(name, refusing(adapter));
    },
    up() {
      for (const [name, adapter] of real) stack.providers.set(name, adapter);
    },
  };
}

function submit(stack: TestStack, key: string, opts: { operation?: string; message?: string; ticketId?: string; headers?: Record<string, string> } = {}) {
  return stack.app.inject({
    method: 'POST',
    url: '/v1/jobs',
    headers: { ...auth(KEYS.alice), 'idempotency-key': key, ...opts.headers },
    payload: { operation: opts.operation ?? REOPENABLE, input: { ticketId: opts.ticketId ?? 'T-reopen', customerMessage: opts.message ?? 'Where is my order?', channel: 'email' } },
  });
}

async function messagesFor(stack: TestStack, ticketId: string): Promise<unknown[]> {
  const body = (await fetch(`${stack.sims.downstream.url}/v1/messages?ticketId=${encodeURIComponent(ticketId)}`).then((r) => r.json())) as any;
  return body.messages ?? body;
}

describe('reopenFailed: the same intent after a failed job starts its next run', () => {
  let stack: TestStack;
  let providers: ReturnType<typeof switchProviders>;
  beforeAll(async () => {
    stack = await startTestStack({ operations: createRegistry([supportReply, { ...supportReply, name: REOPENABLE, reopenFailed: true }]) });
    providers = switchProviders(stack);
  });
  afterEach(() => providers.up());
  afterAll(() => stack.close());

  /** A job of `operation` whose first run failed (every attempt refused), with no effect claimed. */
  async function failedJob(key: string, opts: { operation?: string; ticketId?: string; message?: string } = {}) {
    providers.down();
    const created = await submit(stack, key, opts);
    expect(created.statusCode).toBe(202);
    const failed = await waitForJob(stack, created.json().id, isTerminalJob);
    expect(failed).toMatchObject({ status: 'failed', run: 1, error: { type: 'attempts_exhausted' }, effects: [] });
    providers.up();
    return failed;
  }

  it('answers the retry with 202 and the same job, whose second run succeeds; both runs keep their attempts and each has its bill', async () => {
    // Arrange
    const key = randomUUID();
    const failed = await failedJob(key, { ticketId: 'T-reopen-1' });

    // Act
    const retried = await submit(stack, key, { ticketId: 'T-reopen-1' });
    const done = await waitForJob(stack, failed.id, isTerminalJob);

    // Assert
    expect(retried.statusCode).toBe(202);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect(retried.headers.location).toBe(`/v1/jobs/${failed.id}`);
    expect(retried.json()).toMatchObject({ id: failed.id, run: 2, status: expect.stringMatching(/^(accepted|running|succeeded)$/) });
    expect(done).toMatchObject({ id: failed.id, status: 'succeeded', run: 2 });
    expect(done.error).toBeUndefined();
    expect(done.attempts.map((a: any) => [a.seq, a.run, a.status])).toEqual([
      [1, 1, 'failed'],
      [2, 1, 'failed'],
      [3, 1, 'failed'],
      [4, 2, 'succeeded'],
    ]);
    const reopened = done.events.filter((e: any) => e.type === 'job.reopened');
    expect(reopened).toEqual([expect.objectContaining({ detail: expect.objectContaining({ run: 2, previousRun: 1, previousError: expect.objectContaining({ type: 'attempts_exhausted' }) }) })]);
    expect(done.workflowId).toBe(`${failed.workflowId}-run-2`);
    expect(await messagesFor(stack, 'T-reopen-1')).toHaveLength(1);
    // One bill per run: the failed run's (nothing billable, three attempts), and the winner's.
    expect(done.settlement).toMatchObject({ run: 2, jobStatus: 'succeeded', attempts: [expect.objectContaining({ seq: 4, winner: true })] });
    expect(done.settlements).toEqual([
      expect.objectContaining({ run: 1, jobStatus: 'failed', billable: '0', attempts: expect.arrayContaining([expect.objectContaining({ seq: 1 })]) }),
      expect.objectContaining({ run: 2, jobStatus: 'succeeded' }),
    ]);
    expect(done.settlements[0].attempts).toHaveLength(3);
    const { rows } = await stack.db.pool.query('SELECT run, job_status FROM settlements WHERE job_id = $1 ORDER BY run', [failed.id]);
    expect(rows).toEqual([{ run: 1, job_status: 'failed' }, { run: 2, job_status: 'succeeded' }]);
    const jobs = await stack.db.pool.query('SELECT count(*)::int AS n FROM jobs WHERE idempotency_key = $1', [key]);
    expect(jobs.rows[0].n).toBe(1);
  });

  it('reopens once for twenty identical retries at the same instant: one 202, nineteen replays of the same job', async () => {
    // Arrange
    const key = randomUUID();
    const failed = await failedJob(key, { ticketId: 'T-reopen-storm' });

    // Act
    const responses = await Promise.all(Array.from({ length: 20 }, () => submit(stack, key, { ticketId: 'T-reopen-storm' })));
    const done = await waitForJob(stack, failed.id, isTerminalJob);

    // Assert
    expect(responses.map((r) => r.statusCode).sort()).toEqual([...Array(19).fill(200), 202]);
    expect(new Set(responses.map((r) => r.json().id))).toEqual(new Set([failed.id]));
    expect(responses.filter((r) => r.headers['idempotent-replayed'] === 'true')).toHaveLength(19);
    expect(done).toMatchObject({ status: 'succeeded', run: 2 });
    expect(done.events.filter((e: any) => e.type === 'job.reopened')).toHaveLength(1);
    expect(done.attempts.filter((a: any) => a.run === 2)).toHaveLength(1);
    expect(await messagesFor(stack, 'T-reopen-storm')).toHaveLength(1);
  });

  it('gives the new run the full attempt cap: a run that fails again has made its own three attempts', async () => {
    // Arrange
    const key = randomUUID();
    const failed = await failedJob(key);
    providers.down();

    // Act
    const retried = await submit(stack, key);
    const again = await waitForJob(stack, failed.id, (job) => job.run === 2 && isTerminalJob(job));

    // Assert
    expect(retried.statusCode).toBe(202);
    expect(again).toMatchObject({ status: 'failed', run: 2, error: { type: 'attempts_exhausted' } });
    expect(again.attempts.map((a: any) => a.run)).toEqual([1, 1, 1, 2, 2, 2]);
    expect(again.settlements.map((s: any) => [s.run, s.jobStatus, s.attempts.length])).toEqual([
      [1, 'failed', 3],
      [2, 'failed', 3],
    ]);
  });

  it('refuses to reopen a failed job once one of its effects was claimed: the failure is replayed', async () => {
    // Arrange: the AI step wins, the message is claimed, the downstream rejects it.
    const key = randomUUID();
    const created = await submit(stack, key, { ticketId: 'T-reopen-claimed', message: 'Hello @sink(status=400)' });
    const failed = await waitForJob(stack, created.json().id, isTerminalJob);
    expect(failed).toMatchObject({ status: 'failed', effects: [expect.objectContaining({ name: 'message.send', status: 'failed' })] });

    // Act
    const retried = await submit(stack, key, { ticketId: 'T-reopen-claimed', message: 'Hello @sink(status=400)' });

    // Assert
    expect(retried.statusCode).toBe(200);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.json()).toMatchObject({ id: failed.id, status: 'failed', run: 1, error: failed.error });
    const after = await readJob(stack, failed.id);
    expect(after.events.map((e: any) => e.type)).not.toContain('job.reopened');
    expect(after.attempts).toHaveLength(failed.attempts.length);
  });

  it('replays the failure, as before, for an operation that does not declare reopenFailed', async () => {
    // Arrange
    const key = randomUUID();
    const failed = await failedJob(key, { operation: 'support.reply' });

    // Act
    const retried = await submit(stack, key, { operation: 'support.reply' });

    // Assert
    expect(retried.statusCode).toBe(200);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.json()).toMatchObject({ id: failed.id, status: 'failed', run: 1, error: { type: 'attempts_exhausted' } });
    expect((await readJob(stack, failed.id)).attempts).toHaveLength(3);
  });

  it('answers another payload under the key with 409 and leaves the failed job as it was', async () => {
    // Arrange
    const key = randomUUID();
    const failed = await failedJob(key);

    // Act
    const other = await submit(stack, key, { message: 'Something else entirely' });

    // Assert
    expect(other.statusCode).toBe(409);
    expect(other.json().type).toMatch(/idempotency-key-reused$/);
    expect(await readJob(stack, failed.id)).toMatchObject({ status: 'failed', run: 1 });
  });

  it('does not reopen for a retry whose deadline has already passed: the failure is replayed', async () => {
    // Arrange
    const key = randomUUID();
    const failed = await failedJob(key);

    // Act
    const retried = await submit(stack, key, { headers: { 'request-deadline': new Date(Date.now() - 1_000).toISOString() } });

    // Assert
    expect(retried.statusCode).toBe(200);
    expect(retried.json()).toMatchObject({ id: failed.id, status: 'failed', run: 1 });
  });

  it("lets only the new run's workflow drive a reopened job: the previous run's, running again, ends at its next step", async () => {
    // Arrange: run 1 failed; run 2's attempt takes 1.5 s at the primary
    const key = randomUUID();
    const message = 'Slow second run @sim(sim-primary:delay=1500)';
    const failed = await failedJob(key, { ticketId: 'T-reopen-twice', message });
    const retried = await submit(stack, key, { ticketId: 'T-reopen-twice', message });
    expect(retried.statusCode).toBe(202);

    // Act: while run 2's attempt is in flight, run 1's workflow runs again (its last task retried after the reopen)
    await waitForJob(stack, failed.id, (job) => job.attempts.some((a: any) => a.run === 2 && a.status === 'running'));
    const stale = await stack.temporal.client.workflow.start(JOB_WORKFLOW, {
      taskQueue: stack.workflows.taskQueue,
      workflowId: failed.workflowId,
      args: [{ jobId: failed.id, revision: JOB_WORKFLOW_REVISION }],
    });
    const staleEnded = await stale.result();
    const done = await waitForJob(stack, failed.id, isTerminalJob);

    // Assert: the stale workflow touched nothing; run 2's attempt was never taken for a lost one
    expect(staleEnded).toBe('superseded');
    expect(done).toMatchObject({ status: 'succeeded', run: 2 });
    expect(done.attempts.filter((a: any) => a.run === 2).map((a: any) => a.status)).toEqual(['succeeded']);
    expect(done.events.map((e: any) => e.type)).not.toContain('attempt.unknown');
  });
});


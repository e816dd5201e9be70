import { randomUUID } from 'node:crypto';
import { openAttempt } from '../../src/ledger/attempts';
import { reopenFailedJob } from '../../src/ledger/jobs';
import { auth, KEYS, startTestStack, type TestStack } from '../harness/stack';

/**
 * A reopened job starts its next run in `accepted`, as a new job does, but
 * with its earlier run's attempts behind it: what a provider said then (its
 * Retry-After) still holds when the new run's first attempt would go to it.
 */
describe("a reopened job's first step", () => {
  let stack: TestStack;
  beforeAll(async () => {
    // No worker: each job stays as the test leaves it until the test advances it.
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

  async function admitted(): Promise<{ id: string; requestDigest: string; workflowId: string }> {
    const created = await stack.app.inject({
      method: 'POST',
      url: '/v1/jobs',
      headers: { ...auth(KEYS.alice), 'idempotency-key': randomUUID() },
      payload: { operation: 'support.reply', input: { ticketId: 'T-reopen-backoff', customerMessage: 'Where is my order?', channel: 'email' } },
    });
    expect(created.statusCode).toBe(202);
    const { rows } = await stack.db.pool.query<{ request_digest: string; workflow_id: string }>('SELECT request_digest, workflow_id FROM jobs WHERE id = $1', [created.json().id]);
    return { id: created.json().id, requestDigest: rows[0]!.request_digest, workflowId: rows[0]!.workflow_id };
  }

  it('opens the first attempt of a new job at once', async () => {
    // Arrange
    const job = await admitted();

    // Act
    const step = await stack.activities.advanceJob({ jobId: job.id, attemptId: randomUUID() });

    // Assert
    expect(step).toMatchObject({ kind: 'call', provider: 'sim-primary', seq: 1 });
  });

  it("waits out the Retry-After its primary gave on the run before, even though the new run has no attempt yet", async () => {
    // Arrange: run 1's only attempt was refused with Retry-After: 60 s, the run failed, and the same intent reopened it.
    const job = await admitted();
    const opened = await openAttempt(stack.db.pool, { jobId: job.id, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('no attempt opened');
    await stack.db.pool.query(
      `UPDATE attempts SET status = 'failed', error_class = 'rate_limited', evidence = '{"retryAfterMs": 60000}', ended_at = now() WHERE id = $1`,
      [opened.attempt.id],
    );
    await stack.db.pool.query(`UPDATE jobs SET status = 'failed', terminal_at = now(), error = '{"type":"attempts_exhausted","detail":"rate limited"}' WHERE id = $1`, [job.id]);
    const reopened = await reopenFailedJob(stack.db.pool, { jobId: job.id, requestDigest: job.requestDigest, failedRun: 1, workflowId: `${job.workflowId}-run-2`, deadlineAt: null });
    expect(reopened?.job).toMatchObject({ status: 'accepted', run: 2 });

    // Act
    const step = await stack.activities.advanceJob({ jobId: job.id, attemptId: randomUUID() });

    // Assert: no attempt of run 2 is opened before the minute has passed.
    expect(step).toMatchObject({ kind: 'backoff' });
    expect((step as { ms: number }).ms).toBeGreaterThan(50_000);
    const { rows } = await stack.db.pool.query('SELECT run FROM attempts WHERE job_id = $1', [job.id]);
    expect(rows).toEqual([{ run: 1 }]);
  });
});

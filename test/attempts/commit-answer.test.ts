import { createHash } from 'node:crypto';
import { commitAndClaim, getAttempt, markAttemptRunning, openAttempt } from '../../src/ledger/attempts';
import { startTestStack, submitReply, type TestStack } from '../harness/stack';

/** The fingerprint of an answer as its text: SHA-256 of its JSON, in UTF-8. */
const fingerprint = (output: unknown): string => createHash('sha256').update(JSON.stringify(output)).digest('hex');

describe("an answer's commit, in one call (ledger_commit_answer)", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

  /** A live attempt of a new job, opened by the ledger and marked sent. */
  async function sentAttempt(message: string) {
    const job = (await submitReply(stack, { message })).json();
    const opened = await openAttempt(stack.db.pool, { jobId: job.id, provider: 'sim-primary', model: 'sim-small' });
    if (opened.kind !== 'opened') throw new Error('the attempt did not open');
    expect(await markAttemptRunning(stack.db.pool, opened.attempt.id)).toBe(true);
    return opened.attempt;
  }

  it("records a lost race with the discarded answer's fingerprint, as its text's SHA-256 (any script)", async () => {
    // Arrange: the job moved on since the attempt opened (its version is not the one the attempt holds).
    const attempt = await sentAttempt('a race');
    await stack.db.pool.query('UPDATE jobs SET version = version + 1 WHERE id = $1', [attempt.jobId]);
    const output = { reply: 'Ваш заказ в пути ✓ — 已发货', category: 'shipping' };

    // Act
    const committed = await commitAndClaim(stack.db.pool, attempt, output, { terminal: true, usage: { inputTokens: 3, outputTokens: 5 } });

    // Assert: discarded, not the job's; what it lost to and what it cost are in the ledger.
    expect(committed.outcome).toBe('discarded');
    expect(committed.usageRecorded).toMatchObject({ inputTokens: 3, outputTokens: 5 });
    const after = await getAttempt(stack.db.pool, attempt.id);
    expect(after?.status).toBe('discarded');
    expect(after?.evidence).toMatchObject({ discardedOutputSha256: fingerprint(output), statusWhenDiscarded: 'running', winner: null });
    const { rows } = await stack.db.pool.query<{ completed_by: string | null; detail: Record<string, unknown> }>(
      `SELECT j.completed_by, e.detail FROM jobs j JOIN job_events e ON e.job_id = j.id AND e.type = 'attempt.race_lost' WHERE j.id = $1`,
      [attempt.jobId],
    );
    expect(rows).toEqual([{ completed_by: null, detail: expect.objectContaining({ attemptId: attempt.id, discardedOutputSha256: fingerprint(output), jobStatus: 'running' }) }]);
  });

  it('leaves nothing written when the attempt won the slot while not live: the call fails whole', async () => {
    // Arrange: an attempt that ended (an operator failed it) without the job's version moving, as a broken ledger would have it.
    const attempt = await sentAttempt('inconsistent');
    await stack.db.pool.query(`UPDATE attempts SET status = 'failed', ended_at = now() WHERE id = $1`, [attempt.id]);

    // Act
    const committed = commitAndClaim(stack.db.pool, attempt, { reply: 'late', category: 'other' }, { terminal: true });

    // Assert: the error names it, and the job has no winner.
    await expect(committed).rejects.toThrow(/won the result slot while not live/);
    const { rows } = await stack.db.pool.query('SELECT completed_by, status FROM jobs WHERE id = $1', [attempt.jobId]);
    expect(rows[0]).toEqual({ completed_by: null, status: 'running' });
  });
});

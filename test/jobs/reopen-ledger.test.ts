import { randomUUID } from 'node:crypto';
import { admitJob, reopenFailedJob, type JobRecord } from '../../src/ledger/jobs';
import { createTestDatabase, type TestDatabase } from '../harness/database';

const DIGEST = `sha256:${'a'.repeat(64)}`;

/**
 * The reopen compare-and-swap on its own, against the ledger: each clause of
 * its WHERE is the rule that a failed job may start its next run only once,
 * only for its own intent, only from the failure the caller saw and never
 * after an effect was claimed.
 */
describe('reopenFailedJob, the compare-and-swap on the failed row', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  async function jobIn(status: 'failed' | 'succeeded' | 'cancelled' | 'running'): Promise<JobRecord> {
    const { job } = await admitJob(db.pool, { principalId: 'alice', operation: 'support.reopenable', idempotencyKey: randomUUID(), requestDigest: DIGEST, schemaVersion: 1, input: {}, workflowId: `wf-${randomUUID()}` });
    const terminal = status === 'running' ? null : 'now()';
    await db.pool.query(`UPDATE jobs SET status = $2, terminal_at = ${terminal ?? 'NULL'}, error = CASE WHEN $2 = 'failed' THEN '{"type":"attempts_exhausted","detail":"x"}'::jsonb END WHERE id = $1`, [job.id, status]);
    return job;
  }

  const reopen = (job: JobRecord, overrides: Partial<Parameters<typeof reopenFailedJob>[1]> = {}) =>
    reopenFailedJob(db.pool, { jobId: job.id, requestDigest: DIGEST, failedRun: 1, workflowId: `${job.workflowId}-run-2`, deadlineAt: null, ...overrides });

  it('moves a failed job back to accepted under run 2, with its new workflow and one job.reopened event', async () => {
    // Arrange
    const job = await jobIn('failed');

    // Act
    const reopened = await reopen(job);

    // Assert
    expect(reopened?.job).toMatchObject({ id: job.id, status: 'accepted', run: 2, error: null, terminalAt: null, workflowId: `${job.workflowId}-run-2` });
    const { rows } = await db.pool.query(`SELECT type, detail FROM job_events WHERE job_id = $1 AND type = 'job.reopened'`, [job.id]);
    expect(rows).toEqual([{ type: 'job.reopened', detail: expect.objectContaining({ run: 2, previousRun: 1, previousError: { type: 'attempts_exhausted', detail: 'x' } }) }]);
  });

  it.each(['succeeded', 'cancelled', 'running'] as const)('reopens nothing of a job that is %s', async (status) => {
    const job = await jobIn(status);
    expect(await reopen(job)).toBeUndefined();
  });

  it('reopens nothing for another digest', async () => {
    const job = await jobIn('failed');
    expect(await reopen(job, { requestDigest: `sha256:${'b'.repeat(64)}` })).toBeUndefined();
  });

  it('reopens nothing for a retry that saw an earlier run fail: the failure of run 2 is not reopened by one who saw run 1', async () => {
    // Arrange: run 1 failed and was reopened; run 2 failed too.
    const job = await jobIn('failed');
    await reopen(job);
    await db.pool.query(`UPDATE jobs SET status = 'failed', terminal_at = now() WHERE id = $1`, [job.id]);

    // Act
    const stale = await reopen(job, { failedRun: 1 });

    // Assert
    expect(stale).toBeUndefined();
    expect((await reopen(job, { failedRun: 2, workflowId: `${job.workflowId}-run-3` }))?.job.run).toBe(3);
  });

  it('reopens nothing once an effect of the job was claimed, whatever became of it', async () => {
    // Arrange
    const job = await jobIn('failed');
    await db.pool.query(`INSERT INTO effects (job_id, name, effect_key, status, settled_at, error) VALUES ($1, 'message.send', $2, 'failed', now(), '{"type":"rejected"}')`, [job.id, `key-${job.id}`]);

    // Act / Assert
    expect(await reopen(job)).toBeUndefined();
  });

  it('gives attempts opened after the reopen the new run', async () => {
    // Arrange
    const job = await jobIn('failed');
    await db.pool.query(`INSERT INTO attempts (job_id, operation, seq, provider, model, status, job_version, ended_at) VALUES ($1, 'support.reopenable', 1, 'p', 'm', 'failed', 0, now())`, [job.id]);
    await reopen(job);

    // Act
    await db.pool.query(`INSERT INTO attempts (job_id, operation, seq, provider, model, job_version) VALUES ($1, 'support.reopenable', 2, 'p', 'm', 0)`, [job.id]);

    // Assert
    const { rows } = await db.pool.query('SELECT seq, run FROM attempts WHERE job_id = $1 ORDER BY seq', [job.id]);
    expect(rows).toEqual([{ seq: 1, run: 1 }, { seq: 2, run: 2 }]);
  });
});

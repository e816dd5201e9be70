import { randomUUID } from 'node:crypto';
import { JobWaiter } from '../../src/api/job-waiter';
import { JOB_TERMINAL_CHANNEL } from '../../src/ledger/jobs';
import { createTestDatabase, type TestDatabase } from '../harness/database';

const sleep = (ms: number) => new Promise<'slept'>((resolve) => setTimeout(() => resolve('slept'), ms));

describe('waiting for a job with Prefer: wait', () => {
  let db: TestDatabase;
  let waiter: JobWaiter;
  beforeAll(async () => {
    db = await createTestDatabase();
    waiter = new JobWaiter(db.url);
  });
  afterAll(async () => {
    await waiter.close();
    await db.drop();
  });
  const announce = (jobId: string) => db.pool.query('SELECT pg_notify($1, $2)', [JOB_TERMINAL_CHANNEL, jobId]);

  it("never drops another request's wait when one request is woken twice (by the announcement, then by its own look)", async () => {
    // Arrange: the first request's own look at the job answers late, after the announcement woke it.
    const jobId = randomUUID();
    const first = waiter.wait(jobId, 10_000, () => sleep(400).then(() => true));
    await sleep(100);
    await announce(jobId);
    await first;
    const second = waiter.wait(jobId, 10_000, async () => false);
    await sleep(600); // the first request's look has answered meanwhile

    // Act
    await announce(jobId);
    const woken = await Promise.race([second.then(() => 'woken' as const), sleep(3_000)]);

    // Assert
    expect(woken).toBe('woken');
  });

  it('listens from the start when asked to, before any request waits', async () => {
    // Arrange
    const fresh = new JobWaiter(db.url);
    const listening = async () =>
      (await db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query = $1`, [`LISTEN ${JOB_TERMINAL_CHANNEL}`])).rowCount ?? 0;
    const before = await listening();
    try {
      // Act
      await fresh.listen();

      // Assert
      expect((await listening()) - before).toBe(1);
    } finally {
      await fresh.close();
    }
  });
});

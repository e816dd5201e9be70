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

  it('answers at once, with no look at the ledger, a wait for a job announced after the read that found it open', async () => {
    // Arrange: listening before the read; the job ends between the read and the wait.
    await waiter.listen();
    const jobId = randomUUID();
    const readAtMs = waiter.now();
    await announce(jobId);
    await sleep(200); // the announcement has arrived
    let looked = 0;

    // Act
    const woken = await Promise.race([waiter.wait(jobId, 10_000, async () => ++looked > 0, readAtMs).then(() => 'woken' as const), sleep(3_000)]);

    // Assert
    expect(woken).toBe('woken');
    expect(looked).toBe(0);
  });

  it("waits on past an announcement from before the read that found the job open (a reopened job's earlier end)", async () => {
    // Arrange: the job's earlier run ended and was announced; then the job was reopened and read open.
    await waiter.listen();
    const jobId = randomUUID();
    await announce(jobId);
    await sleep(200);
    const readAtMs = waiter.now();

    // Act
    const waited = waiter.wait(jobId, 10_000, async () => false, readAtMs);
    const early = await Promise.race([waited.then(() => 'woken' as const), sleep(500)]);
    await announce(jobId);
    const woken = await Promise.race([waited.then(() => 'woken' as const), sleep(3_000)]);

    // Assert: not answered by the old announcement; answered by the new one.
    expect(early).toBe('slept');
    expect(woken).toBe('woken');
  });

  it('waits with no look at the ledger for a job read open while listening, and wakes at its announcement', async () => {
    // Arrange
    await waiter.listen();
    const jobId = randomUUID();
    let looked = 0;
    const waited = waiter.wait(jobId, 10_000, async () => ++looked > 0, waiter.now());

    // Act
    await sleep(100);
    await announce(jobId);
    const woken = await Promise.race([waited.then(() => 'woken' as const), sleep(3_000)]);

    // Assert
    expect(woken).toBe('woken');
    expect(looked).toBe(0);
  });

  it('looks at the ledger when the read came before this waiter was listening: an announcement then may have gone unheard', async () => {
    // Arrange: the job was read (and ended, unheard) before the waiter listened.
    const fresh = new JobWaiter(db.url);
    const readAtMs = fresh.now();
    await announce(randomUUID());
    try {
      await fresh.listen();
      let looked = 0;

      // Act
      const woken = await Promise.race([fresh.wait(randomUUID(), 10_000, async () => ++looked > 0, readAtMs).then(() => 'woken' as const), sleep(3_000)]);

      // Assert: the look found it terminal.
      expect(looked).toBe(1);
      expect(woken).toBe('woken');
    } finally {
      await fresh.close();
    }
  });

  it('looks at the ledger when the read is older than the announcements kept: its announcement may be forgotten', async () => {
    // Arrange: a waiter that keeps announcements 100 ms; the job ends just after its read, and is forgotten.
    const brief = new JobWaiter(db.url, { announcementsKeptMs: 100 });
    try {
      await brief.listen();
      const jobId = randomUUID();
      const readAtMs = brief.now();
      await announce(jobId);
      await sleep(200);
      await announce(randomUUID());
      await sleep(100);
      let looked = 0;

      // Act
      const woken = await Promise.race([brief.wait(jobId, 10_000, async () => ++looked > 0, readAtMs).then(() => 'woken' as const), sleep(3_000)]);

      // Assert: the look found it terminal.
      expect(looked).toBe(1);
      expect(woken).toBe('woken');
    } finally {
      await brief.close();
    }
  });
});

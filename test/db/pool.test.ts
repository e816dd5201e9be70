import { inTransaction } from '../../src/db/pool';
import { createTestDatabase, type TestDatabase } from '../harness/database';

describe('a pooled connection', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
  });
  afterAll(() => db.drop());

  it('lost while a transaction holds it fails that transaction, not the process, and the pool goes on', async () => {
    // Arrange: a transaction that waits between two statements, its backend known.
    let backend = 0;
    let inside!: () => void;
    const started = new Promise<void>((resolve) => (inside = resolve));
    const transaction = inTransaction(db.pool, async (tx) => {
      backend = (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      inside();
      await new Promise((resolve) => setTimeout(resolve, 500));
      await tx.query('SELECT 1');
    });
    await started;

    // Act: the server ends that connection (a restart, a failover, an idle timeout).
    await db.pool.query('SELECT pg_terminate_backend($1)', [backend]);

    // Assert
    await expect(transaction).rejects.toThrow();
    expect((await db.pool.query('SELECT 1 AS one')).rows[0].one).toBe(1);
  });
});

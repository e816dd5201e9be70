import { Client } from 'pg';
import { createPool, poolSettings, WARM_CONNECTIONS } from '../../src/db/pool';
import { rehearseJob } from '../../src/ledger/rehearsal';
import { createTestDatabase, type TestDatabase } from '../harness/database';

/** Rows of every table a job writes to, counted. */
async function countRows(db: TestDatabase): Promise<Record<string, number>> {
  const { rows } = await db.pool.query<Record<string, string>>(
    `SELECT (SELECT count(*) FROM jobs) AS jobs, (SELECT count(*) FROM job_events) AS job_events, (SELECT count(*) FROM attempts) AS attempts,
            (SELECT count(*) FROM effects) AS effects, (SELECT count(*) FROM settlements) AS settlements`,
  );
  return Object.fromEntries(Object.entries(rows[0]!).map(([table, count]) => [table, Number(count)]));
}

describe("a connection's rehearsal", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('leaves no row and announces no terminal job', async () => {
    // Arrange: a listener for terminal jobs, as the API's waiter listens.
    const before = await countRows(db);
    const listener = new Client({ connectionString: db.url });
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    await listener.query('LISTEN onceflow_job_terminal');
    const client = await db.pool.connect();

    // Act
    try {
      await rehearseJob(client);
    } finally {
      client.release();
    }
    // A notification committed would arrive within this; one of a rolled-back transaction never does.
    await db.pool.query("SELECT pg_notify('onceflow_job_terminal', 'marker')");
    await new Promise((resolve) => setTimeout(resolve, 300));
    await listener.end();

    // Assert
    expect(await countRows(db)).toEqual(before);
    expect(heard).toEqual(['marker']);
  });

  it('leaves its connection outside any transaction, ready for the next statement', async () => {
    // Arrange
    const client = await db.pool.connect();

    // Act
    try {
      await rehearseJob(client);
      const { rows } = await client.query<{ inside: boolean }>("SELECT now() <> statement_timestamp() OR txid_current_if_assigned() IS NOT NULL AS inside");

      // Assert: a statement on its own is its own transaction again.
      expect(rows[0]!.inside).toBe(false);
    } finally {
      client.release();
    }
  });
});

describe("a process's pool", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
  });
  afterAll(() => db.drop());

  it('keeps its warm connections open while idle, and closes the others', async () => {
    // Arrange: more connections open than are kept, then a quiet spell longer than the idle timeout.
    const pool = createPool(db.url, { ...poolSettings({ poolSize: 5, statementTimeoutMs: 0 }), idleTimeoutMillis: 100 });
    try {
      const clients = await Promise.all(Array.from({ length: 4 }, () => pool.connect()));
      for (const client of clients) client.release();

      // Act
      await new Promise((resolve) => setTimeout(resolve, 500));

      // Assert
      expect(pool.totalCount).toBe(WARM_CONNECTIONS);
    } finally {
      await pool.end();
    }
  });
});

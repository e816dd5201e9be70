import { Client } from 'pg';
import { checkout, createPool, poolSettings, WARM_CONNECTIONS } from '../../src/db/pool';
import { rehearseJob, warmConnections } from '../../src/warm-up/rehearsal';
import { createTestDatabase, type TestDatabase } from '../harness/database';
import { connectionLost, interceptQueries, pause } from '../harness/db-faults';

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

  it("runs a job's statements again on the same connection after a newer migration added a column to each table they read", async () => {
    // Arrange: every statement of a job's way prepared on one connection; then, as a newer process's migration would, a column more in each table.
    const tables = ['jobs', 'job_events', 'attempts', 'effects', 'settlements'];
    const { client, release } = await checkout(db.pool);
    try {
      await rehearseJob(client);
      for (const table of tables) await db.pool.query(`ALTER TABLE ${table} ADD COLUMN added_later integer`);

      // Act + Assert: a prepared statement whose result had every column of its table would now fail ("cached plan must not change result type").
      await expect(rehearseJob(client)).resolves.toBeUndefined();
    } finally {
      release();
      for (const table of tables) await db.pool.query(`ALTER TABLE ${table} DROP COLUMN IF EXISTS added_later`);
    }
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

describe("warming a process's connections", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('gives a connection back only once its own rehearsal has ended, and closes one whose rehearsal failed', async () => {
    // Arrange: two rehearsals at once; the first to open its attempt loses its connection, the second is slow there.
    const pool = createPool(db.url, { max: 2 });
    let opened = 0;
    const hook = async (sql: string) => {
      if (!sql.includes('ledger_open_first_attempt')) return;
      opened++;
      if (opened === 1) return connectionLost();
      if (opened === 2) await pause(500)();
    };
    const before = await countRows(db);

    // Act
    const warming = warmConnections(interceptQueries(pool, hook), 2);

    // Assert: it fails, and by then no connection is left inside its transaction.
    try {
      await expect(warming).rejects.toThrow('Connection terminated unexpectedly');
      const { rows } = await db.pool.query<{ sessions: string }>(
        "SELECT count(*) AS sessions FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
      );
      expect(Number(rows[0]!.sessions)).toBe(0);
      expect(pool.totalCount).toBe(1);
      expect(await countRows(db)).toEqual(before);
    } finally {
      await pool.end();
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

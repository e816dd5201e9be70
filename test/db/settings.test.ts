import { Client } from 'pg';
import { loadConfig, ConfigError } from '../../src/config';
import { MIGRATION_LOCK_ID, migrate } from '../../src/db/migrate';
import { assertReachable, createPool, poolSettings } from '../../src/db/pool';
import { createTestDatabase, type TestDatabase } from '../harness/database';

/** PostgreSQL as production runs it: a pool of the size asked, statements with a time limit, TLS through DATABASE_URL. */
describe('the database settings', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
  });
  afterAll(() => db.drop());

  it('read ONCEFLOW_PG_POOL_SIZE and ONCEFLOW_PG_STATEMENT_TIMEOUT_MS, with defaults, and refuse nonsense', () => {
    expect(loadConfig({}).database).toEqual({ poolSize: 10, statementTimeoutMs: 30_000 });
    expect(loadConfig({ ONCEFLOW_PG_POOL_SIZE: '40', ONCEFLOW_PG_STATEMENT_TIMEOUT_MS: '0' }).database).toEqual({ poolSize: 40, statementTimeoutMs: 0 });
    expect(() => loadConfig({ ONCEFLOW_PG_POOL_SIZE: '0' })).toThrow(ConfigError);
    expect(() => loadConfig({ ONCEFLOW_PG_STATEMENT_TIMEOUT_MS: 'soon' })).toThrow(ConfigError);
  });

  it('cancel a statement that runs past the statement timeout, and keep the pool at its size', async () => {
    // Arrange
    const pool = createPool(db.url, poolSettings({ poolSize: 2, statementTimeoutMs: 200 }));
    try {
      // Act
      const slow = pool.query('SELECT pg_sleep(2)');

      // Assert
      await expect(slow).rejects.toThrow(/statement timeout/);
      expect(pool.options.max).toBe(2);
      expect((await pool.query('SELECT 1 AS one')).rows[0].one).toBe(1);
    } finally {
      await pool.end();
    }
  });

  it('let migrations wait for another starter longer than the statement timeout', async () => {
    // Arrange: another process holds the migration lock for a while.
    const other = new Client({ connectionString: db.url });
    await other.connect();
    await other.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    const pool = createPool(db.url, poolSettings({ poolSize: 2, statementTimeoutMs: 100 }));
    try {
      // Act
      const migrating = migrate(pool);
      await new Promise((resolve) => setTimeout(resolve, 600));
      await other.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]);

      // Assert
      await expect(migrating).resolves.toEqual(expect.any(Array));
      expect((await pool.query('SHOW statement_timeout')).rows[0].statement_timeout).toBe('100ms');
    } finally {
      await other.end();
      await pool.end();
    }
  });

  it('say clearly when DATABASE_URL asks for TLS and the server has none', async () => {
    // Arrange
    const url = `${db.url}${db.url.includes('?') ? '&' : '?'}sslmode=require`;
    const pool = createPool(url, poolSettings({ poolSize: 1, statementTimeoutMs: 1_000 }));
    try {
      // Act
      const reaching = assertReachable(pool, url);

      // Assert
      await expect(reaching).rejects.toThrow(/PostgreSQL at .* is not reachable \(The server does not support SSL connections\); check DATABASE_URL/);
    } finally {
      await pool.end();
    }
  });
});

import { Pool, type PoolClient, type PoolConfig } from 'pg';
import { isRetryableTransactionError } from './errors';

export type Db = Pool;

/**
 * The connections an API or worker process opens and rehearses as it starts
 * (rehearseJob), and keeps open while idle: a job after a quiet spell finds
 * them connected and prepared, instead of connecting anew.
 */
export const WARM_CONNECTIONS = 2;

/** Pool settings from the configuration (ONCEFLOW_PG_POOL_SIZE, ONCEFLOW_PG_STATEMENT_TIMEOUT_MS); WARM_CONNECTIONS of them stay open while idle. */
export function poolSettings(database: { poolSize: number; statementTimeoutMs: number }): PoolConfig {
  return { max: database.poolSize, min: Math.min(WARM_CONNECTIONS, database.poolSize), ...(database.statementTimeoutMs > 0 ? { statement_timeout: database.statementTimeoutMs } : {}) };
}

/**
 * A pg pool with sane timeouts; its errors never crash the process. TLS comes
 * with the connection string (`sslmode=require`, `verify-full` with
 * `sslrootcert=…`, `sslcert=…` and `sslkey=…` for a client certificate).
 */
export function createPool(connectionString: string, overrides: PoolConfig = {}): Pool {
  const pool = new Pool({
    connectionString,
    max: 10,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    ...overrides,
  });
  // An idle client losing its connection must not take the process down.
  pool.on('error', () => undefined);
  return pool;
}

/** Redacts the password of a connection string for messages. */
export function redactUrl(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return '<unparseable DATABASE_URL>';
  }
}

/**
 * Checks that the database answers.
 * @throws Error with a one-line message naming the (redacted) URL.
 */
export async function assertReachable(pool: Pool, connectionString: string): Promise<void> {
  try {
    await pool.query('SELECT 1');
  } catch (err) {
    throw new Error(`PostgreSQL at ${redactUrl(connectionString)} is not reachable (${(err as Error).message}); check DATABASE_URL or unset it to use the embedded server`);
  }
}

/**
 * Runs fn in one transaction: COMMIT on success, ROLLBACK on any throw. A
 * deadlock or serialization failure (the transaction was rolled back whole)
 * runs it again, a few times.
 */
export async function inTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>, tries = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const { client, release } = await checkout(pool);
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      if (attempt >= tries || !isRetryableTransactionError(err)) throw err;
    } finally {
      release();
    }
  }
}

/**
 * A client taken from the pool for several statements. The pool listens for
 * a lost connection only while a client is idle; while it is out, its loss
 * is heard here (else it would end the process), the statement in flight or
 * the next one fails, and release() then destroys the client instead of
 * returning it to the pool (as it does when given the error that left the
 * client in an unknown state).
 */
export async function checkout(pool: Pool): Promise<{ client: PoolClient; release(err?: Error): void }> {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onError = (err: Error): void => {
    lost = err;
  };
  client.on('error', onError);
  return {
    client,
    release(err?: Error) {
      client.removeListener('error', onError);
      client.release(lost ?? err);
    },
  };
}

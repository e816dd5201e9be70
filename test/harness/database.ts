import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { migrate } from '../../src/db/migrate';
import { createPool, type Db } from '../../src/db/pool';
import { readHarnessState } from './state';

export interface TestDatabase {
  url: string;
  pool: Db;
  drop(): Promise<void>;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** A fresh database for one test file, migrated; drop() removes it. */
export async function createTestDatabase(opts: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const { adminDatabaseUrl } = readHarnessState();
  const name = `onceflow_test_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: adminDatabaseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = withDatabase(adminDatabaseUrl, name);
  const pool = createPool(url, { max: 20 });
  if (opts.migrate !== false) await migrate(pool);
  return {
    url,
    pool,
    async drop() {
      await pool.end();
      const client = new Client({ connectionString: adminDatabaseUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

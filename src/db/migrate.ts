import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Pool } from 'pg';
import { migrationsDir } from '../paths';
import { checkout } from './pool';

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export class MigrationError extends Error {
  override name = 'MigrationError';
}

// Any constant works; it only has to be the same for every Onceflow process.
/** The advisory lock concurrent starters take to migrate one at a time. */
export const MIGRATION_LOCK_ID = 0x0ce_f10;

/** Reads `NNNN_name.sql` files in version order. */
export function readMigrations(dir = migrationsDir): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d{4}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => {
      const sql = readFileSync(path.join(dir, file), 'utf8');
      return {
        version: Number(file.slice(0, 4)),
        name: file.replace(/\.sql$/, ''),
        sql,
        checksum: createHash('sha256').update(sql).digest('hex'),
      };
    });
}

/**
 * Applies the migrations not yet applied, each in its own transaction, under an
 * advisory lock so that concurrent starters apply each one once. Forward-only:
 * an applied migration whose file changed is an error, never re-run.
 * @returns the names applied by this call.
 * @throws MigrationError when an applied migration's file was edited.
 */
export async function migrate(pool: Pool, migrations = readMigrations()): Promise<string[]> {
  const { client, release } = await checkout(pool);
  const applied: string[] = [];
  try {
    // Waiting for another starter's migrations, or a long one, is not a stuck statement.
    await client.query('SET statement_timeout = 0');
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    integer     PRIMARY KEY,
      name       text        NOT NULL,
      checksum   text        NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const { rows } = await client.query<{ version: number; checksum: string; name: string }>('SELECT version, checksum, name FROM schema_migrations');
    const done = new Map(rows.map((row) => [row.version, row]));
    for (const migration of migrations) {
      const previous = done.get(migration.version);
      if (previous) {
        if (previous.checksum !== migration.checksum) {
          throw new MigrationError(`migration ${migration.name} was changed after it was applied; add a new migration instead`);
        }
        continue;
      }
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [migration.version, migration.name, migration.checksum]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new MigrationError(`migration ${migration.name} failed: ${(err as Error).message}`);
      }
      applied.push(migration.name);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    await client.query('RESET statement_timeout').catch(() => undefined);
    release();
  }
}

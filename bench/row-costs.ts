/**
 * What a job event's per-row work costs PostgreSQL: the same INSERT into
 * job_events, 20,000 times in one server-side loop, with every trigger on,
 * without the details refresh (refresh_terminal_job_details, which fires on
 * every write to a job's events, attempts and effects), and without any
 * trigger at all (the foreign-key check on jobs too). The rounds alternate
 * the three, and each prints its median. A happy job writes about 11 rows
 * that fire the refresh and about 9 that check a foreign key (the breakdown
 * section's "rows per job"), so the differences, times those counts, are
 * what the two triggers cost a job. Last, the details document a job's
 * terminal write builds (job_details) is timed for a happy job's rows.
 *
 *   npx tsx bench/row-costs.ts [--rounds 5] [--rows 20000]
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from 'pg';
import { createPool } from '../src/db/pool';
import { migrate } from '../src/db/migrate';
import { startEmbeddedPostgres } from '../src/stack/postgres';
import { freePort } from '../src/stack/temporal-dev';
import { fixed, median } from './stats';

const JOB = '00000000-0000-4000-8000-000000000001';
/** A second job for the details document: the INSERT rounds leave JOB's index entries dead behind them. */
const HAPPY_JOB = '00000000-0000-4000-8000-000000000002';

const VARIANTS = {
  'every trigger': [],
  'no details refresh': ['ALTER TABLE job_events DISABLE TRIGGER job_events_details'],
  'no trigger (no foreign-key check either)': ['ALTER TABLE job_events DISABLE TRIGGER ALL'],
} satisfies Record<string, string[]>;

/** A job row with nothing else of its own. */
async function insertJob(db: Client, id: string, key: string): Promise<void> {
  await db.query(
    `INSERT INTO jobs (id, principal_id, operation, idempotency_key, request_digest, schema_version, input, workflow_id)
     VALUES ($1, 'bench', 'bench', $2, 'digest', 1, '{}', $2)`,
    [id, key],
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, rows: { type: 'string', default: '20000' } } });
  const rounds = Number(values.rounds);
  const rowsPerRound = Number(values.rows);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-row-costs-'));
  chmodSync(dir, 0o755);
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort(), database: 'row_costs', persistent: false });
  try {
    const pool = createPool(pg.url);
    await migrate(pool);
    await pool.end();
    const db = new Client({ connectionString: pg.url });
    await db.connect();
    await insertJob(db, JOB, 'row-costs');
    // The loop runs on the server, so the client's round trip is not in the time.
    await db.query(`CREATE FUNCTION row_costs_loop(p_job uuid, p_rows integer) RETURNS double precision LANGUAGE plpgsql AS $$
      DECLARE started timestamptz := clock_timestamp();
      BEGIN
        FOR i IN 1..p_rows LOOP
          INSERT INTO job_events (job_id, type, detail) VALUES (p_job, 'bench.row', '{}'::jsonb);
        END LOOP;
        RETURN extract(epoch FROM clock_timestamp() - started) * 1000;
      END $$`);
    const micros = new Map<string, number[]>(Object.keys(VARIANTS).map((name) => [name, []]));
    for (let round = 0; round < rounds; round++) {
      for (const [name, setup] of Object.entries(VARIANTS)) {
        for (const statement of setup) await db.query(statement);
        const { rows } = await db.query<{ ms: number }>('SELECT row_costs_loop($1, $2) AS ms', [JOB, rowsPerRound]);
        await db.query('ALTER TABLE job_events ENABLE TRIGGER ALL');
        await db.query('DELETE FROM job_events');
        micros.get(name)!.push((Number(rows[0]!.ms) * 1000) / rowsPerRound);
      }
    }
    // The details document of a happy job: one attempt, one effect, seven events.
    await insertJob(db, HAPPY_JOB, 'row-costs-happy');
    await db.query(
      `INSERT INTO attempts (job_id, operation, provider, model, job_version, seq, status) VALUES ($1, 'bench', 'bench', 'bench', 0, 1, 'succeeded')`,
      [HAPPY_JOB],
    );
    await db.query(`INSERT INTO effects (job_id, name, effect_key, status, receipt, settled_at) VALUES ($1, 'send', 'row-costs', 'succeeded', '{"id": "r"}', now())`, [HAPPY_JOB]);
    await db.query(`INSERT INTO job_events (job_id, type, detail) SELECT $1, 'bench.row', '{"n": 1}'::jsonb FROM generate_series(1, 7)`, [HAPPY_JOB]);
    await db.query(`CREATE FUNCTION details_loop(p_job uuid, p_times integer) RETURNS double precision LANGUAGE plpgsql AS $$
      DECLARE started timestamptz := clock_timestamp(); d jsonb;
      BEGIN
        FOR i IN 1..p_times LOOP
          d := job_details(p_job);
        END LOOP;
        RETURN extract(epoch FROM clock_timestamp() - started) * 1000;
      END $$`);
    const details: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const { rows } = await db.query<{ ms: number }>('SELECT details_loop($1, $2) AS ms', [HAPPY_JOB, 2000]);
      details.push((Number(rows[0]!.ms) * 1000) / 2000);
    }
    await db.end();
    const [every, noRefresh, none] = [...micros.values()].map(median) as [number, number, number];
    console.log(`one job event's INSERT, µs per row (medians of ${rounds} rounds of ${rowsPerRound} rows):`);
    for (const [name, each] of micros) console.log(`  ${name.padEnd(42)} ${fixed(median(each), 2)}  (${each.map((us) => fixed(us, 2)).join(', ')})`);
    console.log(`the details refresh: ${fixed(every - noRefresh, 2)} µs a row, about ${fixed(((every - noRefresh) * 11) / 1000, 3)} ms a job (11 rows)`);
    console.log(`the foreign-key check: ${fixed(noRefresh - none, 2)} µs a row, about ${fixed(((noRefresh - none) * 9) / 1000, 3)} ms a job (9 rows)`);
    console.log(`job_details() of one attempt, one effect and seven events: ${fixed(median(details), 1)} µs (${details.map((us) => fixed(us, 1)).join(', ')})`);
  } finally {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

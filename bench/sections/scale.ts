import { randomUUID } from 'node:crypto';
import { createPool } from '../../src/db/pool';
import { RUNTIME_RECORD_SQL } from '../../src/ledger/contracts';
import { runJobs, startOnceflow } from '../e2e';
import type { Infra } from '../infra';
import { load } from '../load';
import { fixed, type ResultRow } from '../stats';

const body = (ticketId: string) => JSON.stringify({ operation: 'support.reply', input: { ticketId, customerMessage: 'Where is my order?', channel: 'email' } });

/** Finished jobs, each with its attempt and effect, written straight into the ledger (triggers off: the details are not needed), then vacuumed. */
async function seed(db: ReturnType<typeof createPool>, from: number, to: number): Promise<void> {
  const client = await db.connect();
  try {
    await client.query('SET session_replication_role = replica');
    for (let start = from; start < to; start += 100_000) {
      const end = Math.min(to, start + 100_000);
      await client.query(
        `WITH j AS (
           INSERT INTO jobs (principal_id, operation, idempotency_key, request_digest, schema_version, input, workflow_id, status, result, output, terminal_at, version)
           SELECT 'seed', 'support.reply', 'seed-' || i, 'sha256:' || md5(i::text) || md5(i::text), 1,
                  jsonb_build_object('ticketId', 'S-' || i, 'customerMessage', 'Where is my order?', 'channel', 'email'),
                  'job-seed-' || i, 'succeeded', '{"reply":"ok","escalate":false,"messageId":"m"}', '{"reply":"ok","escalate":false}', now(), 2
           FROM generate_series($1::int, $2::int - 1) i
           RETURNING id
         ), a AS (
           INSERT INTO attempts (job_id, operation, seq, provider, model, status, job_version, ended_at)
           SELECT id, 'support.reply', 1, 'sim-primary', 'sim-small', 'succeeded', 0, now() FROM j
         )
         INSERT INTO effects (job_id, name, effect_key, status, phase, receipt, settled_at)
         SELECT id, 'message.send', 'onceflow-' || id || '-message.send', 'succeeded', 'sending', '{"messageId":"m"}', now() FROM j`,
        [start, end],
      );
    }
    await client.query('RESET session_replication_role');
  } finally {
    client.release();
  }
  // Vacuumed as well as analysed, as a ledger that grew over time would be: otherwise autovacuum
  // works through the fresh rows while the jobs are measured, and its CPU is counted as theirs.
  for (const table of ['jobs', 'attempts', 'effects']) await db.query(`VACUUM (ANALYZE) ${table}`);
}

/** The plan of a statement: its node types with the indexes they read. */
async function plan(db: ReturnType<typeof createPool>, sql: string, params: unknown[]): Promise<string> {
  const { rows } = await db.query(`EXPLAIN ${sql}`, params);
  return rows.map((r: Record<string, string>) => r['QUERY PLAN']!).join('\n');
}

/**
 * Admission, replay and end-to-end cost as the ledger grows (1,000 to
 * 1,000,000 finished jobs): each must stay flat, served by the same indexes.
 */
export async function scaleSection(infra: Infra, opts: { sizes: number[] }, log: (line: string) => void): Promise<ResultRow[]> {
  const system = await startOnceflow(infra);
  const db = createPool(system.env.DATABASE_URL!, { max: 2 });
  const rows: ResultRow[] = [];
  const baseline: Record<string, number> = {};
  try {
    const replayKey = `scale-replay-${randomUUID()}`;
    const seeded = (await (await fetch(`${system.url}/v1/jobs`, { method: 'POST', headers: { ...system.headers, 'idempotency-key': replayKey, prefer: 'wait=30' }, body: body('R-1') })).json()) as { status: string };
    if (seeded.status !== 'succeeded') throw new Error(`the job to replay is ${seeded.status}`);
    let size = 0;
    for (const target of opts.sizes) {
      log(`scale: seeding the ledger to ${target} jobs …`);
      await seed(db, size, target);
      size = target;
      const replay = await load(system.url, { method: 'POST', path: '/v1/jobs', headers: { ...system.headers, 'idempotency-key': replayKey }, body: body('R-1'), expectStatus: 200 }, 1, 3000);
      const admission = await load(system.url, () => ({ method: 'POST', path: '/v1/jobs', headers: { ...system.headers, 'idempotency-key': randomUUID() }, body: body('A-1'), expectStatus: 202 }), 1, 3000);
      const e2e = await runJobs(system, infra, { jobs: 200, concurrency: 16, ticketPrefix: `scale-${target}` });
      const measures = { 'replay p50 (ms)': replay.p50, 'admission p50 (ms)': admission.p50, 'e2e CPU/job c16 (ms)': e2e.cpuPerJob.total, 'e2e throughput c16 (jobs/s)': e2e.jobsPerSecond };
      for (const [measure, value] of Object.entries(measures)) {
        baseline[measure] ??= value;
        const ratio = value / baseline[measure]!;
        const higherIsBetter = measure.includes('throughput');
        rows.push({ section: 'scale', measure: `${measure} at ${target.toLocaleString('en')} jobs`, value: fixed(value, 2), reference: `${fixed(baseline[measure]!, 2)} at ${opts.sizes[0]!.toLocaleString('en')}`, ratio, target: 'flat (within 1.3x)', ok: higherIsBetter ? ratio >= 1 / 1.3 : ratio <= 1.3 });
      }
    }
    log('scale: plans of the hot statements at the largest size');
    const anyJob = (await db.query(`SELECT id FROM jobs WHERE principal_id = 'seed' LIMIT 1`)).rows[0].id as string;
    console.log(`\n-- replay by scope (jobs_scope_unique)\n${await plan(db, 'SELECT * FROM jobs WHERE principal_id = $1 AND operation = $2 AND idempotency_key = $3', ['seed', 'support.reply', 'seed-7'])}`);
    console.log(`\n-- a job by id (jobs_pkey)\n${await plan(db, 'SELECT * FROM jobs WHERE id = $1', [anyJob])}`);
    console.log(`\n-- run-time record of a provider (attempts_runtime_idx)\n${await plan(db, RUNTIME_RECORD_SQL, ['support.reply', 'sim-primary', 'sim-small', 20])}`);
    console.log(`\n-- the sweeper's open jobs (jobs_open_idx)\n${await plan(db, "SELECT id FROM jobs WHERE terminal_at IS NULL AND created_at < now() - interval '1 minute' ORDER BY created_at LIMIT 500", [])}`);
    console.log(`\n-- a job's attempts and effects (attempts_seq_unique, effects_one_per_job_and_name)\n${await plan(db, 'SELECT * FROM attempts WHERE job_id = $1 ORDER BY seq', [anyJob])}\n${await plan(db, 'SELECT * FROM effects WHERE job_id = $1', [anyJob])}\n`);
    return rows;
  } finally {
    await db.end();
    await system.stop();
  }
}

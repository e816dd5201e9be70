import { appendFileSync, chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../../src/stack/postgres';
import { freePort } from '../../src/stack/temporal-dev';
import { readStat, TICKS_PER_SECOND } from '../cpu';
import { runJobs, startOnceflow } from '../e2e';
import type { Infra } from '../infra';
import { fixed, type ResultRow } from '../stats';

/** CPU time of each thread of a process, in ms, by thread id. */
function threadCpuMs(pid: number): Map<number, { name: string; ms: number }> {
  const threads = new Map<number, { name: string; ms: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readStat(`/proc/${pid}/task/${tid}/stat`);
      threads.set(Number(tid), { name: stat.name, ms: (stat.ownTicks / TICKS_PER_SECOND) * 1000 });
    } catch {
      // gone meanwhile
    }
  }
  return threads;
}

/** A process's CPU since `before`, by group: its main thread, the SDK's Rust core (tokio), and its other threads. */
function byThreadGroup(pid: number, before: Map<number, { name: string; ms: number }>): { main: number; core: number; others: number } {
  const groups = { main: 0, core: 0, others: 0 };
  for (const [tid, { name, ms }] of threadCpuMs(pid)) {
    const spent = ms - (before.get(tid)?.ms ?? 0);
    if (tid === pid) groups.main += spent;
    else if (name.startsWith('tokio')) groups.core += spent;
    else groups.others += spent;
  }
  return groups;
}

/**
 * Where a job's CPU goes, at concurrency 16: the API's and the worker's
 * threads, and PostgreSQL's statements (pg_stat_statements, on a PostgreSQL
 * of this section's own that loads it), beside the whole-system figures of
 * the e2e section. One round.
 */
export async function breakdownSection(infra: Infra, opts: { jobs: number }, log: (line: string) => void): Promise<ResultRow[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-breakdown-'));
  chmodSync(dir, 0o755);
  const dataDir = path.join(dir, 'pg');
  const port = await freePort();
  // pg_stat_statements needs a restart to load: the cluster is created, configured, then started for good.
  await (await startEmbeddedPostgres({ dataDir, port, database: 'postgres', persistent: true })).stop();
  appendFileSync(path.join(dataDir, 'postgresql.conf'), "\nshared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track_planning = on\n");
  const pg = await startEmbeddedPostgres({ dataDir, port, database: 'postgres', persistent: false });
  const serverUrl = pg.adminUrl.replace(/\/postgres$/, '');
  const measured: Infra = {
    ...infra,
    serverUrl,
    pgPid: () => (pg.pid ? [pg.pid] : []),
    async createDatabase(name) {
      const admin = new Client({ connectionString: pg.adminUrl });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      return `${serverUrl}/${name}`;
    },
  };
  try {
    log(`breakdown: ${opts.jobs} jobs at concurrency 16`);
    const system = await startOnceflow(measured);
    const db = new Client({ connectionString: system.env.DATABASE_URL });
    await db.connect();
    try {
      await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await runJobs(system, measured, { jobs: 40, concurrency: 4, ticketPrefix: 'breakdown-warm' });
      await db.query('SELECT pg_stat_statements_reset()');
      await db.query('SELECT pg_stat_reset()');
      const api = system.services.api.proc.pid!;
      const worker = system.services.worker.proc.pid!;
      const apiBefore = threadCpuMs(api);
      const workerBefore = threadCpuMs(worker);
      const run = await runJobs(system, measured, { jobs: opts.jobs, concurrency: 16, ticketPrefix: 'breakdown' });
      const perJob = (ms: number) => fixed(ms / opts.jobs, 2);
      const a = byThreadGroup(api, apiBefore);
      const w = byThreadGroup(worker, workerBefore);
      const { rows: statements } = await db.query<{ calls: string; plans: string; exec: number; plan: number; query: string }>(
        `SELECT calls, plans, total_exec_time AS exec, total_plan_time AS plan, regexp_replace(query, '\\s+', ' ', 'g') AS query
         FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%' ORDER BY total_exec_time + total_plan_time DESC LIMIT 24`,
      );
      const { rows: totals } = await db.query<{ calls: string; plans: string; exec: number; plan: number; wal_bytes: string }>(
        `SELECT sum(calls) AS calls, sum(plans) AS plans, sum(total_exec_time) AS exec, sum(total_plan_time) AS plan, sum(wal_bytes) AS wal_bytes FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%'`,
      );
      const { rows: database } = await db.query<{ xact_commit: string }>('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()');
      const t = totals[0]!;
      const rows: ResultRow[] = [
        { section: 'breakdown', measure: 'CPU/job c16 (ms; app+pg+temporal)', value: `${fixed(run.cpuPerJob.total)} (${fixed(run.cpuPerJob.app)}+${fixed(run.cpuPerJob.postgres)}+${fixed(run.cpuPerJob.temporal)})` },
        { section: 'breakdown', measure: 'API: main thread / other threads (ms/job)', value: `${perJob(a.main)} / ${perJob(a.others + a.core)}` },
        { section: 'breakdown', measure: 'worker: main thread / Rust core / other threads (ms/job)', value: `${perJob(w.main)} / ${perJob(w.core)} / ${perJob(w.others)}` },
        { section: 'breakdown', measure: 'PostgreSQL round trips per job', value: fixed(Number(t.calls) / opts.jobs), target: '<= 8', ok: Number(t.calls) / opts.jobs <= 8 },
        { section: 'breakdown', measure: 'PostgreSQL transactions per job', value: fixed(Number(database[0]!.xact_commit) / opts.jobs), target: '<= 4', ok: Number(database[0]!.xact_commit) / opts.jobs <= 4 },
        {
          section: 'breakdown',
          measure: 'PostgreSQL: statements, transactions, WAL per job',
          value: `${fixed(Number(t.calls) / opts.jobs)} statements (${perJob(t.exec)} ms executing, ${perJob(t.plan)} planning in ${fixed(Number(t.plans) / opts.jobs)} plans), ${fixed(Number(database[0]!.xact_commit) / opts.jobs)} transactions, ${fixed(Number(t.wal_bytes) / opts.jobs / 1024)} KiB WAL`,
        },
        ...statements.map((s) => ({
          section: 'breakdown',
          measure: `pg: ${s.query.slice(0, 70)}`,
          value: `${fixed(Number(s.calls) / opts.jobs, 2)}/job, ${perJob(s.exec)} ms + ${perJob(s.plan)} ms planning (${fixed(Number(s.plans) / opts.jobs, 2)} plans/job)`,
        })),
      ];
      return rows;
    } finally {
      await db.end();
      await system.stop();
    }
  } finally {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

import { appendFileSync, chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../../src/stack/postgres';
import { freePort } from '../../src/stack/temporal-dev';
import { readStat, TICKS_PER_SECOND } from '../cpu';
import { runJobs, startFloor, startOnceflow, startOnceflowInOneProcess, type System } from '../e2e';
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

/**
 * A process's CPU since `before`, by group: its main thread, the SDK's Rust
 * core (tokio), and its other threads (also by thread name); `exited` is what
 * threads that ended meanwhile spent (the process's total less its live threads').
 */
function byThreadGroup(pid: number, before: Map<number, { name: string; ms: number }>, totalBeforeMs: number): { main: number; core: number; others: number; byName: Map<string, number[]>; exited: number } {
  const groups = { main: 0, core: 0, others: 0, byName: new Map<string, number[]>(), exited: 0 };
  let live = 0;
  for (const [tid, { name, ms }] of threadCpuMs(pid)) {
    const spent = ms - (before.get(tid)?.ms ?? 0);
    live += spent;
    if (tid === pid) groups.main += spent;
    else if (name.startsWith('tokio')) groups.core += spent;
    else {
      groups.others += spent;
      groups.byName.set(name, [...(groups.byName.get(name) ?? []), spent]);
    }
  }
  groups.exited = Math.max(0, processCpuMs(pid) - totalBeforeMs - live);
  return groups;
}

/** A process's CPU so far, in ms, its ended threads' included. */
function processCpuMs(pid: number): number {
  const stat = readStat(`/proc/${pid}/stat`);
  return (stat.ownTicks / TICKS_PER_SECOND) * 1000;
}

type ThreadGroups = ReturnType<typeof byThreadGroup>;

/** Waits for bench/alloc-sampler.cjs to write `file`. */
async function written(file: string): Promise<void> {
  const until = Date.now() + 60_000;
  while (!existsSync(file)) {
    if (Date.now() > until) throw new Error(`the allocation sampler wrote no ${file}`);
    await sleep(20);
  }
}

/**
 * With `npm run bench -- --alloc` (BENCH_ALLOC_DIR), starts sampling what
 * each process's main thread allocates (bench/alloc-sampler.cjs, loaded into
 * it): stop() ends it and gives the bytes, in `pids`' order. Without it,
 * stop() gives undefined.
 */
async function sampleAllocations(pids: number[]): Promise<{ stop(): Promise<number[] | undefined> }> {
  const dir = process.env.BENCH_ALLOC_DIR;
  if (!dir) return { stop: async () => undefined };
  for (const pid of pids) process.kill(pid, 'SIGUSR2');
  await Promise.all(pids.map((pid) => written(path.join(dir, `${pid}.started`))));
  return {
    async stop() {
      for (const pid of pids) process.kill(pid, 'SIGUSR2');
      return Promise.all(
        pids.map(async (pid) => {
          const file = path.join(dir, `${pid}.json`);
          await written(file);
          return (JSON.parse(readFileSync(file, 'utf8')) as { bytes: number }).bytes;
        }),
      );
    },
  };
}

const KiB = (bytes: number, jobs: number): string => fixed(bytes / jobs / 1024, 0);

/** The other threads' CPU per job by thread name (the busiest first, each thread of a name apart), and the ended threads'. */
function threadsByName(groups: ThreadGroups, jobs: number): string {
  const perJob = (ms: number) => fixed(ms / jobs, 2);
  return [...groups.byName]
    .map(([name, each]) => ({ name, each: each.sort((x, y) => y - x), total: each.reduce((sum, ms) => sum + ms, 0) }))
    .sort((x, y) => y.total - x.total)
    .slice(0, 4)
    .map(({ name, each, total }) => `${name} ${perJob(total)}${each.length > 1 ? ` (${each.length} threads: ${each.slice(0, 3).map(perJob).join(', ')}${each.length > 3 ? ', …' : ''})` : ''}`)
    .concat(`threads ended meanwhile ${perJob(groups.exited)}`)
    .join(', ');
}

/**
 * A system of one process (its API and worker together), measured as the
 * worker is: the same jobs at concurrency 16, its CPU per job (the whole
 * system's, as the first row) and its threads.
 */
async function oneProcessThreads(system: System, infra: Infra, jobs: number, label: string, prefix: string): Promise<{ rows: ResultRow[]; allocated?: number }> {
  await runJobs(system, infra, { jobs: 40, concurrency: 4, ticketPrefix: `${prefix}-warm` });
  const pid = system.pids()[0]!;
  const sampling = await sampleAllocations([pid]);
  const before = threadCpuMs(pid);
  const totalBefore = processCpuMs(pid);
  const run = await runJobs(system, infra, { jobs, concurrency: 16, ticketPrefix: prefix });
  const groups = byThreadGroup(pid, before, totalBefore);
  const allocated = (await sampling.stop())?.[0];
  const perJob = (ms: number) => fixed(ms / jobs, 2);
  const rows: ResultRow[] = [
    { section: 'breakdown', measure: `${label}: CPU/job c16 (ms; app+pg+temporal)`, value: `${fixed(run.cpuPerJob.total)} (${fixed(run.cpuPerJob.app)}+${fixed(run.cpuPerJob.postgres)}+${fixed(run.cpuPerJob.temporal)})` },
    { section: 'breakdown', measure: `${label}: main thread / Rust core / other threads (ms/job)`, value: `${perJob(groups.main)} / ${perJob(groups.core)} / ${perJob(groups.others)}` },
    { section: 'breakdown', measure: `${label}: other threads by name (ms/job)`, value: threadsByName(groups, jobs) },
  ];
  if (allocated !== undefined) rows.push({ section: 'breakdown', measure: `${label}: allocated on the main thread's heap (KiB/job, sampled)`, value: KiB(allocated, jobs) });
  return allocated === undefined ? { rows } : { rows, allocated };
}

/**
 * The floor's one process, and Onceflow's API and worker in one process as
 * `npm start` runs them: what the split into two costs; with --alloc, what
 * the floor's main thread allocated per job too.
 */
async function oneProcessRows(infra: Infra, jobs: number): Promise<{ rows: ResultRow[]; floorAllocated?: number }> {
  const floor = await startFloor(infra);
  let measured: Awaited<ReturnType<typeof oneProcessThreads>>;
  try {
    measured = await oneProcessThreads(floor, infra, jobs, 'the floor (API and worker in one)', 'breakdown-floor');
  } finally {
    await floor.stop();
  }
  const together = await startOnceflowInOneProcess(infra);
  try {
    const rows = [...measured.rows, ...(await oneProcessThreads(together, infra, jobs, 'Onceflow in one process (as npm start runs it)', 'breakdown-one')).rows];
    return measured.allocated === undefined ? { rows } : { rows, floorAllocated: measured.allocated };
  } finally {
    await together.stop();
  }
}

/**
 * Where a job's CPU goes, at concurrency 16: the API's and the worker's
 * threads, and PostgreSQL's statements (pg_stat_statements, on a PostgreSQL
 * of this section's own that loads it), beside the whole-system figures of
 * the e2e section; then the floor, and Onceflow's API and worker in one
 * process as `npm start` runs them, each measured the same way. One round.
 * With `nested`, PostgreSQL also counts the statements run inside the ledger's
 * functions and triggers (`pg_stat_statements.track = all`), printed as
 * `pg (nested)`; the totals stay the clients' own statements.
 */
export async function breakdownSection(infra: Infra, opts: { jobs: number; nested?: boolean }, log: (line: string) => void): Promise<ResultRow[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'onceflow-breakdown-'));
  chmodSync(dir, 0o755);
  const dataDir = path.join(dir, 'pg');
  const port = await freePort();
  // pg_stat_statements needs a restart to load: the cluster is created, configured, then started for good.
  await (await startEmbeddedPostgres({ dataDir, port, database: 'postgres', persistent: true })).stop();
  appendFileSync(
    path.join(dataDir, 'postgresql.conf'),
    `\nshared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track_planning = on\npg_stat_statements.track = ${opts.nested ? 'all' : 'top'}\n`,
  );
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
      // The next transaction id, without taking one: the ids taken meanwhile are the transactions that wrote.
      const nextXid = async () => Number((await db.query<{ xid: string }>('SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xid')).rows[0]!.xid);
      const xidBefore = await nextXid();
      const api = system.services.api.proc.pid!;
      const worker = system.services.worker.proc.pid!;
      const sampling = await sampleAllocations([api, worker]);
      const apiBefore = threadCpuMs(api);
      const workerBefore = threadCpuMs(worker);
      const apiTotalBefore = processCpuMs(api);
      const workerTotalBefore = processCpuMs(worker);
      const run = await runJobs(system, measured, { jobs: opts.jobs, concurrency: 16, ticketPrefix: 'breakdown' });
      const writes = (await nextXid()) - xidBefore;
      const perJob = (ms: number) => fixed(ms / opts.jobs, 2);
      const a = byThreadGroup(api, apiBefore, apiTotalBefore);
      const w = byThreadGroup(worker, workerBefore, workerTotalBefore);
      const allocated = await sampling.stop();
      const { rows: statements } = await db.query<{ calls: string; plans: string; exec: number; plan: number; wal_bytes: string; query: string; toplevel: boolean }>(
        `SELECT calls, plans, total_exec_time AS exec, total_plan_time AS plan, wal_bytes, regexp_replace(query, '\\s+', ' ', 'g') AS query, toplevel
         FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%' AND query NOT LIKE '%pg_current_snapshot%' ORDER BY total_exec_time + total_plan_time DESC LIMIT ${opts.nested ? 40 : 24}`,
      );
      const { rows: totals } = await db.query<{ calls: string; trips: string; plans: string; exec: number; plan: number; wal_bytes: string }>(
        // A deferred trigger's statements run at its COMMIT, on the server, and PostgreSQL counts them as top-level: they are
        // no round trip (they name the trigger's NEW row; no client statement does).
        `SELECT sum(calls) AS calls, sum(calls) FILTER (WHERE query !~ '\\mNEW\\.') AS trips, sum(plans) AS plans, sum(total_exec_time) AS exec, sum(total_plan_time) AS plan, sum(wal_bytes) AS wal_bytes
         FROM pg_stat_statements WHERE toplevel AND query NOT LIKE '%pg_stat%' AND query NOT LIKE '%pg_current_snapshot%'`,
      );
      // Which tables the WAL comes from: a row's update that changes no indexed column is HOT (no index entries written).
      const { rows: tables } = await db.query<{ relname: string; ins: string; upd: string; hot: string }>(
        `SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE n_tup_ins + n_tup_upd > 0 ORDER BY n_tup_ins + n_tup_upd DESC`,
      );
      const { rows: database } = await db.query<{ xact_commit: string }>('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()');
      const t = totals[0]!;
      const rows: ResultRow[] = [
        { section: 'breakdown', measure: 'CPU/job c16 (ms; app+pg+temporal)', value: `${fixed(run.cpuPerJob.total)} (${fixed(run.cpuPerJob.app)}+${fixed(run.cpuPerJob.postgres)}+${fixed(run.cpuPerJob.temporal)})` },
        { section: 'breakdown', measure: 'API: main thread / other threads (ms/job)', value: `${perJob(a.main)} / ${perJob(a.others + a.core)}` },
        { section: 'breakdown', measure: 'worker: main thread / Rust core / other threads (ms/job)', value: `${perJob(w.main)} / ${perJob(w.core)} / ${perJob(w.others)}` },
        { section: 'breakdown', measure: "worker: other threads by name (ms/job)", value: threadsByName(w, opts.jobs) },
        { section: 'breakdown', measure: "PostgreSQL round trips per job (the clients' statements)", value: fixed(Number(t.trips) / opts.jobs, 2), target: '<= 8', ok: Number(t.trips) / opts.jobs <= 8 },
        { section: 'breakdown', measure: 'PostgreSQL transactions per job (all, read-only ones too)', value: fixed(Number(database[0]!.xact_commit) / opts.jobs), target: '<= 4', ok: Number(database[0]!.xact_commit) / opts.jobs <= 4 },
        { section: 'breakdown', measure: 'PostgreSQL transactions that write, per job (transaction ids taken)', value: fixed(writes / opts.jobs) },
        {
          section: 'breakdown',
          measure: 'PostgreSQL: statements, transactions, WAL per job',
          value: `${fixed(Number(t.calls) / opts.jobs)} statements (${perJob(t.exec)} ms executing, ${perJob(t.plan)} planning in ${fixed(Number(t.plans) / opts.jobs)} plans), ${fixed(Number(database[0]!.xact_commit) / opts.jobs)} transactions, ${fixed(Number(t.wal_bytes) / opts.jobs / 1024)} KiB WAL`,
        },
        ...statements.map((s) => ({
          section: 'breakdown',
          measure: `${s.toplevel ? 'pg' : 'pg (nested)'}: ${s.query.slice(0, 70)}`,
          value: `${fixed(Number(s.calls) / opts.jobs, 2)}/job, ${perJob(s.exec)} ms + ${perJob(s.plan)} ms planning (${fixed(Number(s.plans) / opts.jobs, 2)} plans/job), ${fixed(Number(s.wal_bytes) / opts.jobs / 1024, 2)} KiB WAL`,
        })),
        {
          section: 'breakdown',
          measure: 'PostgreSQL rows per job: inserted, updated (HOT), by table',
          value: tables.map((t) => `${t.relname} ${fixed(Number(t.ins) / opts.jobs, 2)}, ${fixed(Number(t.upd) / opts.jobs, 2)} (${fixed(Number(t.hot) / opts.jobs, 2)})`).join('; '),
        },
      ];
      await db.end();
      await system.stop();
      const together = await oneProcessRows(measured, opts.jobs);
      rows.splice(4, 0, ...together.rows);
      const [inApi, inWorker] = allocated ?? [];
      if (inApi !== undefined && inWorker !== undefined && together.floorAllocated !== undefined) {
        const ratio = (inApi + inWorker) / together.floorAllocated;
        rows.splice(4, 0, {
          section: 'breakdown',
          measure: "allocated on the main threads' heaps (KiB/job, sampled; API+worker)",
          value: `${KiB(inApi + inWorker, opts.jobs)} (${KiB(inApi, opts.jobs)}+${KiB(inWorker, opts.jobs)})`,
          reference: `${KiB(together.floorAllocated, opts.jobs)} the floor`,
          ratio,
        });
      }
      return rows;
    } finally {
      await db.end().catch(() => undefined);
      await system.stop();
    }
  } finally {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

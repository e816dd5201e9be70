/**
 * `npm run bench [-- --sections LIST] [--rounds N] [--quick] [--pg-nested] [--alloc]`: Onceflow
 * measured side by side with references in one run, on the same PostgreSQL,
 * Temporal dev server and simulators (each a process of its own).
 *
 * Sections (default: front-door,e2e,start,breakdown):
 * - front-door: replay of a finished key vs a bare Fastify route doing one
 *   primary-key lookup; admission of a new key vs a bare INSERT plus
 *   workflow.start; a storm of 1,000 identical POSTs (one job).
 * - e2e: the same job end to end, Onceflow vs the DBOS peer
 *   (bench/peers/dbos), concurrency 1 and 16: CPU per job of the whole
 *   system (app, PostgreSQL, Temporal), latency, throughput, history length.
 * - start: the first job after a start against the hundredth.
 * - breakdown: where a job's CPU goes at concurrency 16: the API's and the
 *   worker's threads, PostgreSQL's statements (pg_stat_statements; with
 *   `--pg-nested`, also those inside the ledger's functions and triggers;
 *   with `--alloc`, what the main threads' heaps allocated per job, beside
 *   the floor's, by V8's sampling heap profiler, whose own cost the CPU rows
 *   of that run then include; the profiles are kept, and their folder
 *   printed, for Chrome DevTools).
 * - memory (long): API and worker RSS after 10,000 and 50,000 jobs.
 * - scale (long): admission, replay and end-to-end cost as the ledger grows
 *   from 1,000 to 1,000,000 jobs, and the plans of the hot statements.
 *
 * `--temporal postgres` runs them on Temporal's own server with PostgreSQL
 * persistence and several history shards (a production-shaped Temporal,
 * src/stack/temporal-cluster.ts) instead of the dev server.
 *
 * Figures are medians of the rounds. It needs `npm run build` (it runs the
 * processes from dist/), which `npm run bench` does first.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startInfra } from './infra';
import { breakdownSection } from './sections/breakdown';
import { e2eSection } from './sections/e2e';
import { frontDoorSection } from './sections/front-door';
import { memorySection } from './sections/memory';
import { scaleSection } from './sections/scale';
import { startSection } from './sections/start';
import { printRows, type ResultRow } from './stats';

const SECTIONS = ['front-door', 'e2e', 'start', 'breakdown', 'memory', 'scale'] as const;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { sections: { type: 'string', default: 'front-door,e2e,start,breakdown' }, rounds: { type: 'string', default: '3' }, quick: { type: 'boolean', default: false }, 'pg-nested': { type: 'boolean', default: false }, alloc: { type: 'boolean', default: false }, temporal: { type: 'string', default: 'dev' } },
    strict: true,
  });
  const sections = values.sections!.split(',').map((s) => s.trim());
  for (const section of sections) if (!SECTIONS.includes(section as (typeof SECTIONS)[number])) throw new Error(`unknown section ${section}; known: ${SECTIONS.join(', ')}`);
  const rounds = Number(values.rounds);
  const quick = values.quick!;
  const log = (line: string): void => console.log(line);
  const temporal = values.temporal!;
  if (temporal !== 'dev' && temporal !== 'postgres') throw new Error(`--temporal is dev or postgres, not ${temporal}`);
  if (values.alloc) {
    // Read by bench/e2e.ts (each process loads the sampler) and the breakdown section (which signals it).
    process.env.BENCH_ALLOC_DIR = mkdtempSync(path.join(os.tmpdir(), 'onceflow-alloc-'));
    log(`allocation profiles: ${process.env.BENCH_ALLOC_DIR}`);
  }
  const infra = await startInfra(log, { temporal });
  const rows: ResultRow[] = [];
  const started = Date.now();
  try {
    if (sections.includes('front-door')) rows.push(...(await frontDoorSection(infra, { rounds }, log)));
    if (sections.includes('e2e')) rows.push(...(await e2eSection(infra, { rounds, jobsAt1: quick ? 20 : 60, jobsAt16: quick ? 100 : 400 }, log)));
    if (sections.includes('start')) rows.push(...(await startSection(infra, { rounds }, log)));
    if (sections.includes('breakdown')) rows.push(...(await breakdownSection(infra, { jobs: quick ? 100 : 400, nested: values['pg-nested']! }, log)));
    if (sections.includes('memory')) rows.push(...(await memorySection(infra, quick ? { first: 1_000, total: 3_000 } : { first: 10_000, total: 50_000 }, log)));
    if (sections.includes('scale')) rows.push(...(await scaleSection(infra, { sizes: quick ? [1_000, 50_000] : [1_000, 100_000, 1_000_000] }, log)));
  } finally {
    await infra.stop();
  }
  console.log(`\nresults: medians of ${rounds} rounds (${Math.round((Date.now() - started) / 1000)} s)`);
  printRows(rows);
}

main().catch((err: unknown) => {
  console.error(`bench: ${(err as Error).stack ?? String(err)}`);
  process.exit(1);
});

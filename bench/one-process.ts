/**
 * Child process of the benchmark: Onceflow's API and one worker in one
 * process, on one pool, as `npm start` runs them (without the embedded
 * services, which the benchmark runs apart). It tells how much of a job's
 * CPU is the split into two processes, against the same job measured as
 * production runs it (`npm run api` and `npm run worker`).
 */
import path from 'node:path';

// Compiled by `npm run bench` into dist/ and loaded from there, as production runs it (see servers.ts).
const dist = (module: string): string => path.join(__dirname, '..', 'dist', module);
const { loadConfig } = require(dist('config')) as typeof import('../src/config');
const { checkConfiguration } = require(dist('check/check-configuration')) as typeof import('../src/check/check-configuration');
const { assertReachable, createPool, poolSettings } = require(dist('db/pool')) as typeof import('../src/db/pool');
const { migrate } = require(dist('db/migrate')) as typeof import('../src/db/migrate');
const { createMetrics } = require(dist('metrics/metrics')) as typeof import('../src/metrics/metrics');
const { startWorker } = require(dist('worker/start')) as typeof import('../src/worker/start');
const { startApi } = require(dist('api/start')) as typeof import('../src/api/start');

async function main(): Promise<void> {
  const config = loadConfig();
  const checked = await checkConfiguration({ env: process.env, typeScriptModules: false });
  if (checked.problems.length > 0) throw new Error(checked.problems.map((problem) => JSON.stringify(problem)).join('\n'));
  const db = createPool(config.databaseUrl!, poolSettings(config.database));
  await assertReachable(db, config.databaseUrl!);
  await migrate(db);
  const worker = await startWorker(config, db, createMetrics(), checked.operations!);
  const api = await startApi(config, db, createMetrics({ defaultMetrics: true }), checked.operations!);
  process.stdout.write(`one process: listening on ${api.url}\n`);
  process.on('SIGTERM', () => {
    void api
      .close()
      .then(() => worker.close())
      .then(() => db.end())
      .finally(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

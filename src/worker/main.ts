/** `npm run worker`: a Temporal worker alone, against DATABASE_URL and TEMPORAL_ADDRESS. */
import { loadConfig } from '../config';
import { createMetrics } from '../metrics/metrics';
import { migrate } from '../db/migrate';
import { assertReachable, createPool, poolSettings } from '../db/pool';
import { checkConfiguration } from '../check/check-configuration';
import { OperationsFileError } from '../operations/problems';
import { runMain } from '../process/run-main';
import { serveMetrics } from '../metrics/server';
import { startWorker } from './start';

runMain('worker', async () => {
  const config = loadConfig();
  // Before anything is opened: the check `npm start` and `onceflow check` run. Compiled code loads JavaScript modules only.
  const checked = await checkConfiguration({ env: process.env, typeScriptModules: false });
  if (checked.problems.length > 0) throw new OperationsFileError(checked.problems);
  const operations = checked.operations!;
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set; `npm start` runs the whole stack with an embedded PostgreSQL');
  const db = createPool(config.databaseUrl, poolSettings(config.database));
  await assertReachable(db, config.databaseUrl);
  await migrate(db);
  const metrics = createMetrics({ defaultMetrics: true });
  // The worker's own counters (attempts, unknowns, discards, effects) for Prometheus.
  const metricsServer = await serveMetrics(metrics.registry, config.api.host, config.workerMetricsPort, 'ONCEFLOW_WORKER_METRICS_PORT');
  const worker = await startWorker(config, db, metrics, operations);
  console.log(`worker: polling ${config.temporal.taskQueue} in namespace ${config.temporal.namespace} at ${config.temporal.address}`);
  console.log(`worker: metrics on ${metricsServer.url}`);
  return async () => {
    await worker.close();
    await metricsServer.close();
    await db.end();
  };
});

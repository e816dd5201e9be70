/** `npm run worker`: a Temporal worker alone, against DATABASE_URL and TEMPORAL_ADDRESS. */
import { createServer } from 'node:http';
import { loadConfig } from '../config';
import { createMetrics } from '../metrics/metrics';
import { migrate } from '../db/migrate';
import { assertReachable, createPool } from '../db/pool';
import { runMain } from '../stack/main-helpers';
import { startWorker } from '../stack/services';

runMain('worker', async () => {
  const config = loadConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set; `npm start` runs the whole stack with an embedded PostgreSQL');
  const db = createPool(config.databaseUrl);
  await assertReachable(db, config.databaseUrl);
  await migrate(db);
  const metrics = createMetrics({ defaultMetrics: true });
  const worker = await startWorker(config, db, metrics);
  console.log(`worker: polling ${config.temporal.taskQueue} in namespace ${config.temporal.namespace} at ${config.temporal.address}`);
  // The worker's own counters (attempts, unknowns, discards, effects) for Prometheus.
  const metricsPort = Number(process.env.ONCEFLOW_WORKER_METRICS_PORT ?? 9464);
  const server = createServer((request, response) => {
    if (request.url !== '/metrics') return void response.writeHead(404).end();
    metrics.registry.metrics().then((text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text));
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(metricsPort, config.api.host, resolve));
  console.log(`worker: metrics on http://${config.api.host}:${metricsPort}/metrics`);
  return async () => {
    server.close();
    await worker.close();
    await db.end();
  };
});

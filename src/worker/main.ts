/** `npm run worker`: a Temporal worker alone, against DATABASE_URL and TEMPORAL_ADDRESS. */
import { loadConfig } from '../config';
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
  const worker = await startWorker(config, db);
  console.log(`worker: polling ${config.temporal.taskQueue} in namespace ${config.temporal.namespace} at ${config.temporal.address}`);
  return async () => {
    await worker.close();
    await db.end();
  };
});

/** `npm run api`: the HTTP API alone, against DATABASE_URL and TEMPORAL_ADDRESS. */
import { loadConfig } from '../config';
import { migrate } from '../db/migrate';
import { assertReachable, createPool } from '../db/pool';
import { loadOperations } from '../operations/load';
import { runMain } from '../process/run-main';
import { startApi } from './start';

runMain('api', async () => {
  const config = loadConfig();
  // Before anything is opened: a wrong operations file stops the start with every problem in it.
  const operations = loadOperations(config.operationsFile);
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set; `npm start` runs the whole stack with an embedded PostgreSQL');
  if (config.keys.principals.size === 0 && config.keys.operatorKeys.length === 0) throw new Error('set ONCEFLOW_API_KEYS (principal:key,...) and/or ONCEFLOW_OPERATOR_KEYS');
  const db = createPool(config.databaseUrl);
  await assertReachable(db, config.databaseUrl);
  await migrate(db);
  const api = await startApi(config, db, undefined, operations);
  console.log(`api: listening on ${api.url}`);
  return async () => {
    await api.close();
    await db.end();
  };
});

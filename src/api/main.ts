/** `npm run api`: the HTTP API alone, against DATABASE_URL and TEMPORAL_ADDRESS. */
import { loadConfig } from '../config';
import { migrate } from '../db/migrate';
import { assertReachable, createPool, poolSettings } from '../db/pool';
import { runMain } from '../process/run-main';
import { startApi } from './start';

runMain('api', async () => {
  const config = loadConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set; `npm start` runs the whole stack with an embedded PostgreSQL');
  if (config.keys.principals.size === 0 && config.keys.operatorKeys.length === 0) throw new Error('set ONCEFLOW_API_KEYS (principal:key,...) and/or ONCEFLOW_OPERATOR_KEYS');
  const db = createPool(config.databaseUrl, poolSettings(config.database));
  await assertReachable(db, config.databaseUrl);
  await migrate(db);
  const api = await startApi(config, db);
  console.log(`api: listening on ${api.url}`);
  return async () => {
    await api.close();
    await db.end();
  };
});

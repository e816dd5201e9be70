/** `npm run api`: the HTTP API alone, against DATABASE_URL and TEMPORAL_ADDRESS. */
import { loadConfig } from '../config';
import { migrate } from '../db/migrate';
import { assertReachable, createPool, poolSettings } from '../db/pool';
import { hasLiveApiKey } from '../ledger/api-keys';
import { checkConfiguration } from '../check/check-configuration';
import { OperationsFileError } from '../operations/problems';
import { runMain } from '../process/run-main';
import { startApi } from './start';

runMain('api', async () => {
  const config = loadConfig();
  // Before anything is opened: the check `npm start` and `onceflow check` run. Compiled code loads JavaScript modules only.
  const checked = await checkConfiguration({ env: process.env, typeScriptModules: false });
  if (checked.problems.length > 0) throw new OperationsFileError(checked.problems);
  const operations = checked.operations!;
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set; `npm start` runs the whole stack with an embedded PostgreSQL');
  const db = createPool(config.databaseUrl, poolSettings(config.database));
  await assertReachable(db, config.databaseUrl);
  await migrate(db);
  if (config.keys.principals.size === 0 && config.keys.operatorKeys.length === 0 && !(await hasLiveApiKey(db))) {
    throw new Error('no API key: create one with `onceflow keys create --principal NAME`, or set ONCEFLOW_API_KEYS (principal:key,...) and/or ONCEFLOW_OPERATOR_KEYS');
  }
  const api = await startApi(config, db, undefined, operations);
  console.log(`api: listening on ${api.url}`);
  return async () => {
    await api.close();
    await db.end();
  };
});

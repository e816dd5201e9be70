/**
 * `npm start`: the whole product on one machine. PostgreSQL (embedded unless
 * DATABASE_URL), the Temporal dev server per temporal-dev.yaml (unless
 * TEMPORAL_ADDRESS), the simulated providers and downstream, the worker and
 * the API. Ctrl-C stops everything it started, in reverse order.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { loadConfig, parseApiKeys, type OnceflowConfig } from '../config';
import { migrate } from '../db/migrate';
import { assertReachable, createPool, redactUrl } from '../db/pool';
import { SIM_PORT_ENV, simStackOptionsFromEnv, startSimStack } from '../sim/main';
import { createMetrics } from '../metrics/metrics';
import { runMain, throwIfInterrupted } from './main-helpers';
import { dataDir } from './paths';
import { startEmbeddedPostgres } from './postgres';
import { loadProviders, startApi, startWorker } from './services';
import { verifyAtStart } from './verify-at-start';
import { createRegistry } from '../operations/registry';
import { loadTemporalDevConfig, startDevServer, startDevServerByDownload } from './temporal-dev';
import { resolveTemporalCli } from './tools';

const log = (line: string): void => console.log(`onceflow: ${line}`);
const warn = (line: string): void => console.error(`onceflow: WARNING: ${line}`);

runMain('onceflow', async (signal) => {
  const stops: Array<() => Promise<void>> = [];
  const stopAll = async (): Promise<void> => {
    for (const stop of stops.reverse()) await stop().catch((err: unknown) => log(`while stopping: ${(err as Error).message}`));
  };
  try {
    return await start(stops, stopAll, signal);
  } catch (err) {
    await stopAll();
    throw err;
  }
});

async function start(stops: Array<() => Promise<void>>, stopAll: () => Promise<void>, signal: AbortSignal): Promise<() => Promise<void>> {
  // Ctrl-C during start-up: each step checks, and the caller stops what was started.
  const step = <T>(value: T): T => {
    throwIfInterrupted(signal);
    return value;
  };
  // Short timeouts on the dev stack, so the demo's unknown attempts and stale
  // effects resolve in seconds; any of them set in the environment wins.
  const env: NodeJS.ProcessEnv = {
    ONCEFLOW_ATTEMPT_TIMEOUT_MS: '5000',
    ONCEFLOW_RECONCILE_INTERVAL_MS: '5000',
    ONCEFLOW_HEARTBEAT_TIMEOUT_MS: '3000',
    ONCEFLOW_EFFECT_LEASE_MS: '5000',
    ...process.env,
  };
  let demoKey: string | undefined;
  if (!env.ONCEFLOW_API_KEYS && !env.ONCEFLOW_OPERATOR_KEYS) {
    demoKey = `k_demo_${randomBytes(12).toString('hex')}`;
    env.ONCEFLOW_API_KEYS = `demo:${demoKey}`;
    env.ONCEFLOW_OPERATOR_KEYS = `k_operator_${randomBytes(12).toString('hex')}`;
  }

  if (!env.DATABASE_URL) {
    const pg = await startEmbeddedPostgres({
      dataDir: path.join(dataDir, 'postgres'),
      port: Number(env.ONCEFLOW_PG_PORT ?? 54329),
      database: 'onceflow',
      persistent: true,
      log,
    });
    stops.push(pg.stop);
    step(pg);
    env.DATABASE_URL = pg.url;
    log(`PostgreSQL (embedded) at ${redactUrl(pg.url)}`);
  }

  let uiUrl: string | undefined;
  if (!env.TEMPORAL_ADDRESS) {
    const devConfig = loadTemporalDevConfig();
    const cli = await resolveTemporalCli({ build: true, log });
    const server = cli ? await startDevServer(cli.path, devConfig, log) : await startDevServerByDownload(devConfig, log);
    stops.push(server.stop);
    step(server);
    env.TEMPORAL_ADDRESS = server.address;
    env.TEMPORAL_NAMESPACE = server.namespace;
    uiUrl = server.uiUrl;
    if (uiUrl) env.TEMPORAL_UI_URL = uiUrl;
    log(`Temporal dev server at ${server.address} (namespace ${server.namespace})${cli ? ` from ${cli.path}` : ' (downloaded by the SDK)'}`);
  }

  const sims = await startSimStack(simStackOptionsFromEnv(env));
  stops.push(() => sims.close());
  step(sims);
  // The built-in providers and the messaging URL call the simulators where they
  // listen now (a port of 0 is chosen at start), never another copy's on the defaults.
  env[SIM_PORT_ENV.primary.name] = String(sims.primary.port);
  env[SIM_PORT_ENV.backup.name] = String(sims.backup.port);
  env[SIM_PORT_ENV.downstream.name] = String(sims.downstream.port);
  log(`simulated providers: ${sims.primary.name} ${sims.primary.url}, ${sims.backup.name} ${sims.backup.url}; downstream ${sims.downstream.url}`);

  const config: OnceflowConfig = loadConfig(env);
  const db = createPool(config.databaseUrl!);
  stops.push(() => db.end());
  await assertReachable(db, config.databaseUrl!);
  const applied = await migrate(db);
  if (applied.length) log(`migrations applied: ${applied.join(', ')}`);

  // Whatever the providers come from, failover is on only where a contract verification passed.
  const operations = createRegistry();
  const { providers, routeFor } = await loadProviders(config, operations);
  await verifyAtStart({ db, operations, providers, routeFor }, config, { info: log, warn });
  step(providers);

  // One process here: the API's /metrics also shows the worker's counters.
  const metrics = createMetrics({ defaultMetrics: true });
  const worker = await startWorker(config, db, metrics);
  stops.push(worker.close);
  step(worker);
  const api = await startApi(config, db, metrics);
  stops.push(api.close);
  step(api);

  log('ready');
  console.log(`
  API            ${api.url}   (docs: ${api.url}/docs)
  Temporal UI    ${uiUrl ?? config.temporal.uiUrl}
${demoKey ? `  demo API key   ${demoKey}   (principal "demo"; printed once)\n  operator key   ${parseApiKeys(undefined, env.ONCEFLOW_OPERATOR_KEYS).operatorKeys[0]}\n` : ''}
  Try:  curl -s -X POST ${api.url}/v1/jobs \\
          -H 'Authorization: Bearer ${demoKey ?? '<your key>'}' -H 'Idempotency-Key: demo-1' \\
          -H 'Content-Type: application/json' -H 'Prefer: wait=10' \\
          -d '{"operation":"support.reply","input":{"ticketId":"T-1","customerMessage":"Where is my order?","channel":"email"}}'

  Ctrl-C stops everything.
`);
  return stopAll;
}

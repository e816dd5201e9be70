/**
 * `npm start`: the whole product on one machine. PostgreSQL (embedded unless
 * DATABASE_URL), the Temporal dev server per temporal-dev.yaml (unless
 * TEMPORAL_ADDRESS), the simulated providers and downstream, the worker and
 * the API. SIGINT (Ctrl-C), SIGTERM or SIGHUP stop everything it started in
 * one sequence, the reverse of the start: the API, the worker, the
 * simulators, the Temporal server, then PostgreSQL; then it exits 0.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { loadConfig, parseApiKeys, type OnceflowConfig } from '../config';
import { migrate } from '../db/migrate';
import { assertReachable, createPool, poolSettings, redactUrl } from '../db/pool';
import { SIM_PORT_ENV, SimPortInUseError, simStackOptionsFromEnv } from '../sim/main';
import { startSimStackClearOf } from '../sim/stack';
import { createMetrics } from '../metrics/metrics';
import { runMain, throwIfInterrupted } from '../process/run-main';
import { serveMetrics } from '../metrics/server';
import { dataDir, projectRoot } from '../paths';
import { startEmbeddedPostgres } from './postgres';
import { startApi, type RunningApi } from '../api/start';
import { mountDemo } from '../demo/mount';
import { loadProviders } from '../providers/load';
import { startWorker } from '../worker/start';
import { verifyAtStart } from './verify-at-start';
import { checkConfiguration } from '../check/check-configuration';
import { OperationsFileError } from '../operations/problems';
import { loadTemporalDevConfig, startDevServer, startDevServerByDownload } from './temporal-dev';
import { resolveTemporalCli } from './tools';
import { removeStackFile, stackFilePath, writeStackFile } from './stack-file';
import type { OperationRegistry } from '../operations/registry';

const log = (line: string): void => console.log(`onceflow: ${line}`);
const warn = (line: string): void => console.error(`onceflow: WARNING: ${line}`);

/** What start-up has started, stopped last-first; a named part says when it has stopped. */
type Stops = Array<{ name?: string; stop: () => Promise<void> }>;

/**
 * What `npm start` sets unless the environment does: timeouts short enough
 * that the demo's unknown attempts and stale effects resolve in seconds (the
 * defaults of `npm run api` and `npm run worker` are for production).
 */
export const DEV_STACK_DEFAULTS = {
  ONCEFLOW_ATTEMPT_TIMEOUT_MS: '5000',
  ONCEFLOW_RECONCILE_INTERVAL_MS: '5000',
  ONCEFLOW_HEARTBEAT_TIMEOUT_MS: '3000',
  ONCEFLOW_WORKFLOW_TASK_TIMEOUT_MS: '3000',
  ONCEFLOW_EFFECT_LEASE_MS: '5000',
} as const;

const operatorKeyOf = (env: NodeJS.ProcessEnv): string | undefined => parseApiKeys(undefined, env.ONCEFLOW_OPERATOR_KEYS).operatorKeys[0];

/** The banner's examples: one submission of each operation loaded (up to three), with its newest version's example input. */
function tryLines(apiUrl: string, demoKey: string | undefined, operations: OperationRegistry): string {
  const examples = [...operations.values()].slice(0, 3).map((operation, index) => {
    const version = operation.versions[operation.versions.length - 1]!;
    // An alias is asked as a model, through the OpenAI-compatible entry (docs/entries.md).
    const [route, body, prefer] = operation.alias
      ? ['/openai/v1/chat/completions', JSON.stringify({ model: operation.name, ...(version.example as object) }), '']
      : ['/v1/jobs', JSON.stringify({ operation: operation.name, input: version.example }), " -H 'Prefer: wait=10'"];
    return `  ${index === 0 ? 'Try:' : '    '}  curl -s -X POST ${apiUrl}${route} -H 'Authorization: Bearer ${demoKey ?? '<your key>'}' \\
          -H 'Idempotency-Key: try-${index + 1}' -H 'Content-Type: application/json'${prefer} \\
          -d '${body.replace(/'/g, "'\\''")}'`;
  });
  return examples.join('\n');
}

runMain('onceflow', async (signal) => {
  const stops: Stops = [];
  const stopAll = async (): Promise<void> => {
    for (let part = stops.pop(); part; part = stops.pop()) {
      try {
        await part.stop();
        if (part.name) log(`stopped ${part.name}`);
      } catch (err) {
        log(`while stopping ${part.name ?? 'a connection'}: ${(err as Error).message}`);
      }
    }
  };
  try {
    return await start(stops, stopAll, signal);
  } catch (err) {
    await stopAll();
    throw err;
  }
});

async function start(stops: Stops, stopAll: () => Promise<void>, signal: AbortSignal): Promise<() => Promise<void>> {
  // Ctrl-C during start-up: each step checks, and the caller stops what was started.
  const step = <T>(value: T): T => {
    throwIfInterrupted(signal);
    return value;
  };
  // Short timeouts on the dev stack, so the demo's unknown attempts and stale
  // effects resolve in seconds; any of them set in the environment wins.
  const env: NodeJS.ProcessEnv = { ...DEV_STACK_DEFAULTS, ...process.env };
  const devDefaults = Object.keys(DEV_STACK_DEFAULTS).filter((name) => process.env[name] === undefined);
  // Before anything starts: what `onceflow check` checks (both files, modules in TypeScript too, every
  // ${ENV} they name, prices, receipts) stops the start with every problem in it, each with its line.
  const checked = await checkConfiguration({ env, typeScriptModules: true });
  if (checked.problems.length > 0) throw new OperationsFileError(checked.problems);
  const loaded = checked.operations!;
  let demoKey: string | undefined;
  if (!env.ONCEFLOW_API_KEYS && !env.ONCEFLOW_OPERATOR_KEYS) {
    demoKey = `k_demo_${randomBytes(12).toString('hex')}`;
    env.ONCEFLOW_API_KEYS = `demo:${demoKey}`;
    env.ONCEFLOW_OPERATOR_KEYS = `k_operator_${randomBytes(12).toString('hex')}`;
  }

  if (!env.DATABASE_URL) {
    const pg = await startEmbeddedPostgres({
      // Relative to the project root, like temporal-dev.yaml's dbFilename.
      dataDir: env.ONCEFLOW_PG_DATA_DIR ? path.resolve(projectRoot, env.ONCEFLOW_PG_DATA_DIR) : path.join(dataDir, 'postgres'),
      port: Number(env.ONCEFLOW_PG_PORT ?? 54329),
      database: 'onceflow',
      persistent: true,
      // Stopped by us, after the worker and the Temporal server, also on a terminal's Ctrl-C.
      ownProcessGroup: true,
      log,
    });
    stops.push({ name: 'PostgreSQL', stop: pg.stop });
    step(pg);
    env.DATABASE_URL = pg.url;
    log(`PostgreSQL (embedded) at ${redactUrl(pg.url)}`);
  }

  let uiLine: string | undefined;
  if (!env.TEMPORAL_ADDRESS) {
    const devConfig = loadTemporalDevConfig(undefined, env);
    const cli = await resolveTemporalCli({ build: true, log });
    const server = cli ? await startDevServer(cli.path, devConfig, log, { ownProcessGroup: true }) : await startDevServerByDownload(devConfig, log);
    stops.push({ name: 'the Temporal dev server', stop: server.stop });
    step(server);
    env.TEMPORAL_ADDRESS = server.address;
    env.TEMPORAL_NAMESPACE = server.namespace;
    if (server.uiUrl) env.TEMPORAL_UI_URL = server.uiUrl;
    uiLine = server.uiUrl ?? 'off (TEMPORAL_UI=0 or ui: false in temporal-dev.yaml)';
    log(`Temporal dev server at ${server.address} (namespace ${server.namespace})${cli ? ` from ${cli.path}` : ' (downloaded by the SDK)'}`);
  }

  // The simulators start before the API and the worker's metrics listen: one given port 0 must not take theirs.
  const ours = loadConfig(env);
  const portsOfThisStack = new Set([ours.api.port, ours.workerMetricsPort]);
  const sims = await startSimStackClearOf(simStackOptionsFromEnv(env), portsOfThisStack).catch((err: unknown) =>
    Promise.reject(err instanceof SimPortInUseError ? new Error(`port ${err.port} on 127.0.0.1 is busy; set ${SIM_PORT_ENV[err.role].name}`) : err),
  );
  stops.push({ name: 'the simulators', stop: () => sims.close() });
  step(sims);
  // The built-in providers and the messaging URL call the simulators where they
  // listen now (a port of 0 is chosen at start), never another copy's on the defaults.
  env[SIM_PORT_ENV.primary.name] = String(sims.primary.port);
  env[SIM_PORT_ENV.backup.name] = String(sims.backup.port);
  env[SIM_PORT_ENV.downstream.name] = String(sims.downstream.port);
  log(`simulated providers: ${sims.primary.name} ${sims.primary.url}, ${sims.backup.name} ${sims.backup.url}; downstream ${sims.downstream.url}`);

  const config: OnceflowConfig = loadConfig(env);
  const db = createPool(config.databaseUrl!, poolSettings(config.database));
  stops.push({ stop: () => db.end() });
  await assertReachable(db, config.databaseUrl!);
  const applied = await migrate(db);
  if (applied.length) log(`migrations applied: ${applied.join(', ')}`);

  // Whatever the providers come from, failover is on only where a contract verification passed.
  const operations = loaded.registry;
  const { providers, routeFor } = await loadProviders(config, operations);
  await verifyAtStart({ db, operations, providers, routeFor }, config, { info: log, warn });
  step(providers);

  // Each part counts on its own registry, served where `npm run worker` and
  // `npm run api` serve it, so one scrape configuration fits both ways of
  // running. The process's own metrics (memory, event loop) are the API's.
  const workerMetrics = createMetrics();
  const workerMetricsServer = await serveMetrics(workerMetrics.registry, config.api.host, config.workerMetricsPort, 'ONCEFLOW_WORKER_METRICS_PORT');
  stops.push({ stop: workerMetricsServer.close });
  const worker = await startWorker(config, db, workerMetrics, loaded, { verifyByDefault: true, log });
  stops.push({ name: 'the worker', stop: worker.close });
  step(worker);
  // The demo page exists here only, on the dev stack: `npm run api` never mounts it.
  const api = await startApi(config, db, createMetrics({ defaultMetrics: true }), loaded, {
    mount: (app) => mountDemo(app, { apiKey: demoKey, messagesUrl: sims.downstream.url }),
  });
  stops.push({ name: 'the API', stop: api.close });
  step(api);
  if (config.verifyAtStart) await verifyEntriesAtStart(api, { info: log, warn });

  // The CLI of this checkout finds the database, the API and the operator key here (stack-file.ts).
  const stackFile = stackFilePath(env);
  writeStackFile(stackFile, { databaseUrl: config.databaseUrl!, apiUrl: api.url, ...(operatorKeyOf(env) ? { operatorKey: operatorKeyOf(env)! } : {}) });
  stops.push({ stop: async () => removeStackFile(stackFile) });

  log('ready');
  console.log(`
  API            ${api.url}   (docs: ${api.url}/docs)
  Demo page      ${api.url}/demo
  Console        ${api.url}/console   (sign in with an operator key)
  Temporal UI    ${uiLine ?? config.temporal.uiUrl}
  Metrics        ${api.url}/metrics (API), ${workerMetricsServer.url} (worker)
${demoKey ? `  demo API key   ${demoKey}   (principal "demo"; printed once)\n  operator key   ${operatorKeyOf(env)}\n` : ''}
  Database       ${redactUrl(config.databaseUrl!)}   (onceflow keys and the operator's commands of this checkout find it, the API and the operator key in ${path.relative(process.cwd(), stackFile) || stackFile})
${devDefaults.length ? `  Dev timeouts   ${devDefaults.map((name) => `${name}=${DEV_STACK_DEFAULTS[name as keyof typeof DEV_STACK_DEFAULTS]}`).join(' ')}   (npm start's own; set one to override it)\n` : ''}
${tryLines(api.url, demoKey, operations)}

  Ctrl-C stops everything.
`);
  return stopAll;
}

/**
 * Each model alias through each protocol entry, with the official clients,
 * once the API and the worker are up (api/entries/verify.ts). A failure is
 * reported, not fatal: the entries serve all the same, and GET /v1/providers
 * says which are not verified.
 */
async function verifyEntriesAtStart(api: RunningApi, log: { info: (line: string) => void; warn: (line: string) => void }): Promise<void> {
  try {
    for (const verification of await api.app.entryProbes.verify({})) {
      const failed = verification.probes.flatMap((probe) => Object.entries(probe.checks).filter(([, check]) => !check.passed).map(([name, check]) => `${probe.name}: ${name}: ${check.detail}`));
      if (verification.passed) log.info(`entry verified: ${verification.alias} through ${verification.entry} (${verification.client})`);
      else log.warn(`entry NOT verified: ${verification.alias} through ${verification.entry} (${verification.client}): ${failed.join('; ') || 'no probes'}`);
    }
  } catch (err) {
    log.warn(`the entries could not be verified: ${(err as Error).message}`);
  }
}

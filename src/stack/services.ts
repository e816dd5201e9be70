import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import type { Pool } from 'pg';
import { createActivities } from '../activities';
import { apiContracts, buildApp, type App } from '../api/app';
import { JobWaiter } from '../api/job-waiter';
import type { OnceflowConfig } from '../config';
import { createMetrics, type Metrics } from '../metrics/metrics';
import { createRegistry } from '../operations/registry';
import { createWorker } from '../worker/worker';
import { buildActivityDeps } from '../worker/activity-deps';
import { ensureRetentionSchedule, ensureSweeperSchedule } from '../temporal/schedules';
import type { OperationRegistry } from '../operations/registry';
import { builtInProvidersYaml, createProviders, loadProvidersConfig, parseProvidersConfig, routeFor } from '../providers/config';

/**
 * Connects to Temporal, turning the SDK's retry-forever into a one-line error.
 * @throws Error naming TEMPORAL_ADDRESS when the server does not answer.
 */
export async function connectTemporal(address: string): Promise<Connection> {
  try {
    return await Connection.connect({ address, connectTimeout: '5 seconds' });
  } catch (err) {
    throw new Error(`Temporal at ${address} is not reachable (${(err as Error).message}); check TEMPORAL_ADDRESS or unset it to run the dev server`);
  }
}

export interface RunningApi {
  app: App;
  url: string;
  close(): Promise<void>;
}

/** Builds the API on its dependencies and listens on config.api. */
export async function startApi(config: OnceflowConfig, db: Pool, metrics: Metrics = createMetrics({ defaultMetrics: true })): Promise<RunningApi> {
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required');
  const connection = await connectTemporal(config.temporal.address);
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const waiter = new JobWaiter(config.databaseUrl);
  const operations = createRegistry();
  const { providers, routeFor: route } = await loadProviders(config, operations);
  const app = await buildApp({
    config,
    db,
    workflows: { client, taskQueue: config.temporal.taskQueue, searchAttributes: true },
    operations,
    contracts: apiContracts(config, providers, route),
    metrics,
    waiter,
    temporalReady: async () => {
      await connection.workflowService.getSystemInfo({});
    },
  });
  try {
    await app.listen({ host: config.api.host, port: config.api.port });
  } catch (err) {
    await app.close();
    await waiter.close();
    await connection.close();
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(code === 'EADDRINUSE' ? `port ${config.api.port} is busy; set ONCEFLOW_API_PORT` : `the API cannot listen: ${(err as Error).message}`);
  }
  return {
    app,
    // The bound port: ONCEFLOW_API_PORT=0 takes a free one.
    url: `http://${config.api.host}:${(app.server.address() as AddressInfo).port}`,
    async close() {
      await app.close();
      await waiter.close();
      await connection.close();
    },
  };
}

export interface RunningWorker {
  worker: Worker;
  close(): Promise<void>;
}

let runtimeInstalled = false;

/**
 * Installs the Temporal runtime once per process: warnings and errors only, and
 * no signal handlers of its own (each entry point shuts down in its own order).
 */
export function installTemporalRuntime(level: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' = 'WARN'): void {
  if (runtimeInstalled) return;
  Runtime.install({ logger: new DefaultLogger(level), shutdownSignals: [] });
  runtimeInstalled = true;
}

/**
 * The providers and routes of ONCEFLOW_PROVIDERS_FILE, or the built-in file
 * that points at the simulators where config.simulators says they listen.
 * @throws ProvidersConfigError naming the file and the key that is wrong.
 */
export async function loadProviders(config: OnceflowConfig, operations: OperationRegistry, env: NodeJS.ProcessEnv = process.env) {
  const providersConfig = config.providersFile ? await loadProvidersConfig(config.providersFile) : parseProvidersConfig(builtInProvidersYaml(config.simulators), 'built-in providers');
  const providers = createProviders(providersConfig, env);
  // Resolved once at boot, so a bad route fails the start, not a job.
  const routes = new Map([...operations.values()].map((operation) => [operation.name, routeFor(providersConfig, operation.name, operation.defaultRoute)]));
  return { providers, routeFor: (operation: string) => routes.get(operation) ?? [] };
}

/** Starts a worker polling config.temporal.taskQueue; close() drains it. */
export async function startWorker(config: OnceflowConfig, db: Pool, metrics: Metrics = createMetrics({ defaultMetrics: true })): Promise<RunningWorker> {
  installTemporalRuntime();
  const operations = createRegistry();
  const { providers, routeFor: route } = await loadProviders(config, operations);
  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect({ address: config.temporal.address });
  } catch (err) {
    throw new Error(`Temporal at ${config.temporal.address} is not reachable (${(err as Error).message}); check TEMPORAL_ADDRESS`);
  }
  // The worker's own client: the sweeper starts job workflows with it, and it keeps the Schedules up to date.
  const clientConnection = await connectTemporal(config.temporal.address);
  const client = new Client({ connection: clientConnection, namespace: config.temporal.namespace });
  const workflows = { client, taskQueue: config.temporal.taskQueue, searchAttributes: true };
  const worker = await createWorker({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    stickyQueueTimeoutMs: config.temporal.stickyQueueTimeoutMs,
    activities: createActivities(buildActivityDeps({ db, metrics, config, operations, providers, routeFor: route, workflows })),
  });
  const running = worker.run();
  await ensureRetentionSchedule(client, { taskQueue: config.temporal.taskQueue, retentionDays: config.retentionDays });
  await ensureSweeperSchedule(client, { taskQueue: config.temporal.taskQueue });
  return {
    worker,
    async close() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await connection.close();
      await clientConnection.close();
    },
  };
}

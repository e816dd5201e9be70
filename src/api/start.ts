import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@temporalio/client';
import type { Pool } from 'pg';
import type { OnceflowConfig } from '../config';
import { createMetrics, type Metrics } from '../metrics/metrics';
import { recordOperationVersions } from '../ledger/operation-versions';
import { recordBaselines } from '../canary/baseline';
import { warmConnections } from '../warm-up/rehearsal';
import { loadOperations, type LoadedOperations } from '../operations/load';
import { loadProviders } from '../providers/load';
import { connectTemporal } from '../temporal/connect';
import { warmUpStartMessages } from '../temporal/message-warm-up';
import { createEffectRegistry } from '../effects/registry';
import { apiContracts, buildApp, type App } from './app';
import { JobWaiter } from './job-waiter';
import { urlHost } from '../url-host';

export interface RunningApi {
  app: App;
  url: string;
  close(): Promise<void>;
}

export interface StartApiOptions {
  /** Adds routes to the built API before it listens (`npm start` mounts the demo page here). */
  mount?: (app: App) => void | Promise<void>;
}

/**
 * Builds the API on its dependencies and listens on config.api.
 * @throws OperationsFileError when the operations file is wrong, or changes an input schema under a version jobs were made with.
 */
export async function startApi(config: OnceflowConfig, db: Pool, metrics: Metrics = createMetrics({ defaultMetrics: true }), loaded: LoadedOperations = loadOperations(config.operationsFile), options: StartApiOptions = {}): Promise<RunningApi> {
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required');
  const operations = loaded.registry;
  const { providers, routeFor: route } = await loadProviders(config, operations);
  await recordOperationVersions(db, operations);
  await recordBaselines(db, operations, route);
  const connection = await connectTemporal(config.temporal.connection);
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const waiter = new JobWaiter(config.databaseUrl);
  const app = await buildApp({
    config,
    db,
    workflows: { client, taskQueue: config.temporal.taskQueue, searchAttributes: config.temporal.searchAttributes, workflowTaskTimeoutMs: config.temporal.workflowTaskTimeoutMs },
    operations,
    contracts: apiContracts(config, providers, route),
    effects: { adapters: createEffectRegistry({ config: config.effects, db, declared: loaded.httpEffects }), verificationMaxAgeMs: config.effects.verificationMaxAgeMs },
    metrics,
    waiter,
    temporalReady: async () => {
      await connection.workflowService.getSystemInfo({});
    },
  });
  try {
    await options.mount?.(app);
    // What the first request would pay for otherwise: the LISTEN connection of Prefer: wait, pool connections (rehearsed: rolled back, nothing stays), the start message's codecs.
    await Promise.all([waiter.listen(), warmConnections(db)]);
    warmUpStartMessages();
    await app.listen({ host: config.api.host, port: config.api.port });
    await askReady(app.server.address() as AddressInfo);
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

/**
 * One readiness request of the API's own, over loopback, before it says it
 * listens: the first client's request does not pay for the first uses of
 * Node's HTTP parser and socket writes and of Fastify's routing, reply and
 * serialization. It reaches no job and counts against nobody's sign-in; one
 * that fails is let go (the API is listening all the same).
 */
function askReady(address: AddressInfo): Promise<void> {
  return new Promise((resolve) => {
    const request = get(`http://${urlHost(address.address)}:${address.port}/readyz`, { agent: false, timeout: 5_000, headers: { 'user-agent': 'onceflow-warm-up' } }, (response) => {
      response.resume();
      response.once('end', resolve).once('error', () => resolve());
    });
    request.once('timeout', () => request.destroy()).once('error', () => resolve());
  });
}

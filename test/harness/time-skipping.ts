import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createActivities, type Activities } from '../../src/activities';
import type { ProviderAdapter } from '../../src/providers/types';
import { requestDigest } from '../../src/jobs/digest';
import { jobWorkflowId } from '../../src/jobs/scope';
import { admitJob } from '../../src/ledger/jobs';
import { createMetrics, type Metrics } from '../../src/metrics/metrics';
import { createRegistry } from '../../src/operations/registry';
import { createSimProviders, SIM_ROUTE } from '../../src/sim/providers';
import { buildActivityDeps } from '../../src/worker/activity-deps';
import { loadConfig } from '../../src/config';
import { verifyContracts } from '../../src/contracts/verify';
import { startSimStack, type SimStack } from '../../src/sim/stack';
import { JOB_WORKFLOW, JOB_WORKFLOW_REVISION, type JobWorkflowInput, type RouteStep } from '../../src/temporal/contract';
import { createTestDatabase, type TestDatabase } from './database';
import { createTimeSkippingEnv, workflowBundle } from './temporal';

export interface TimeSkippingStack {
  env: TestWorkflowEnvironment;
  db: TestDatabase;
  sims: SimStack;
  metrics: Metrics;
  taskQueue: string;
  /** Runs fn with a fresh worker polling the task queue (one worker per test). */
  withWorker<T>(fn: () => Promise<T>): Promise<T>;
  /** Admits a support.reply job (with the caller's deadline, if given) and starts its workflow; returns its ids. */
  startJob(message: string, opts?: { deadlineAt?: Date }): Promise<{ jobId: string; workflowId: string }>;
  close(): Promise<void>;
}

/**
 * The real ledger, the real simulators and the real activities, on Temporal's
 * time-skipping test server: timers of hours pass in milliseconds.
 */
export interface TimeSkippingOptions {
  /** The provider route of every operation; default the simulators' (primary, then backup). */
  route?: RouteStep[];
  /** Providers beside the two simulators, given the simulators' URLs. */
  extraProviders?: (sims: SimStack) => ProviderAdapter[];
  /** Wraps the activities the workers run (to count or observe calls). */
  wrapActivities?: (activities: Activities) => Activities;
}

export async function startTimeSkippingStack(settings: NodeJS.ProcessEnv = {}, opts: TimeSkippingOptions = {}): Promise<TimeSkippingStack> {
  const [env, db, sims] = await Promise.all([createTimeSkippingEnv(), createTestDatabase(), startSimStack()]);
  const metrics = createMetrics();
  const taskQueue = `ts-${randomUUID()}`;
  const config = loadConfig({
    ONCEFLOW_ATTEMPT_TIMEOUT_MS: '1000',
    ONCEFLOW_HEARTBEAT_TIMEOUT_MS: '5000',
    ONCEFLOW_RECONCILE_INTERVAL_MS: String(10 * 60_000),
    ONCEFLOW_ATTEMPT_BACKOFF_MS: '100',
    ONCEFLOW_EFFECT_LEASE_MS: '2000',
    ONCEFLOW_EFFECT_CALL_TIMEOUT_MS: '500',
    ONCEFLOW_MESSAGES_URL: sims.downstream.url,
    ...settings,
  });
  const operations = createRegistry();
  const providers = createSimProviders({ primary: sims.primary.url, backup: sims.backup.url });
  await verifyContracts({ db: db.pool, operations, providers, routeFor: () => SIM_ROUTE }, {}, { samples: 1, timeoutMs: 5_000 });
  for (const provider of opts.extraProviders?.(sims) ?? []) providers.set(provider.name, provider);
  const route = opts.route ?? SIM_ROUTE;
  const built = createActivities(
    buildActivityDeps({
      db: db.pool,
      metrics,
      config,
      operations,
      providers,
      routeFor: () => route,
    }),
  );
  const activities = opts.wrapActivities ? opts.wrapActivities(built) : built;
  const workers = new Set<Worker>();
  return {
    env,
    db,
    sims,
    metrics,
    taskQueue,
    async withWorker(fn) {
      const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: workflowBundle(), activities });
      workers.add(worker);
      try {
        return await worker.runUntil(fn);
      } finally {
        workers.delete(worker);
      }
    },
    async startJob(message, opts = {}) {
      const scope = { principalId: 'alice', operation: 'support.reply', idempotencyKey: randomUUID() };
      const input = { ticketId: 'T-9', customerMessage: message, channel: 'chat' };
      const { job } = await admitJob(db.pool, {
        ...scope,
        input,
        schemaVersion: 1,
        requestDigest: requestDigest(scope.operation, 1, input),
        workflowId: jobWorkflowId(scope),
        ...(opts.deadlineAt ? { deadlineAt: opts.deadlineAt } : {}),
      });
      const args: [JobWorkflowInput] = [{ jobId: job.id, searchAttributes: false, revision: JOB_WORKFLOW_REVISION }];
      await env.client.workflow.start(JOB_WORKFLOW, { taskQueue, workflowId: job.workflowId, args });
      return { jobId: job.id, workflowId: job.workflowId };
    },
    async close() {
      // A test that timed out leaves its worker running: stop it before its server goes away.
      for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
      await env.teardown();
      await sims.close();
      await db.drop();
    },
  };
}

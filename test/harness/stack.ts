import type { Worker } from '@temporalio/worker';
import type { Pool } from 'pg';
import { createActivities, type Activities } from '../../src/activities';
import { createEffectRegistry } from '../../src/effects/registry';
import type { OnceflowConfig } from '../../src/config';
import { verifyEffects } from '../../src/effects/verify/verify-effects';
import { apiContracts, buildApp, type App } from '../../src/api/app';
import { JobWaiter } from '../../src/api/job-waiter';
import { loadConfig, parseApiKeys } from '../../src/config';
import { createMetrics, type Metrics } from '../../src/metrics/metrics';
import { createRegistry, type OperationRegistry } from '../../src/operations/registry';
import type { WorkflowTarget } from '../../src/temporal/starter';
import type { RouteStep } from '../../src/temporal/contract';
import { createWorker } from '../../src/worker/worker';
import { createSimProviders, SIM_PRICE_TABLE, SIM_ROUTE } from '../../src/sim/providers';
import { buildActivityDeps } from '../../src/worker/activity-deps';
import { verifyContracts } from '../../src/contracts/verify';
import { recordBaselines } from '../../src/canary/baseline';
import type { ProviderAdapter } from '../../src/providers/types';
import { startSimStack, type SimStack } from '../../src/sim/stack';
import { createTestDatabase, type TestDatabase } from './database';
import { connectDevTemporal, workflowBundle, type DevTemporal } from './temporal';

export const KEYS = {
  alice: 'k_alice_test',
  bob: 'k_bob_test',
  operator: 'k_operator_test',
} as const;

export const auth = (key: string): { authorization: string } => ({ authorization: `Bearer ${key}` });

export interface TestStack {
  app: App;
  sims: SimStack;
  providers: Map<string, ProviderAdapter>;
  db: TestDatabase;
  temporal: DevTemporal;
  workflows: WorkflowTarget;
  metrics: Metrics;
  /** The activities the stack's worker runs (call them directly to play a zombie or a second worker). */
  activities: Activities;
  /** The effects' settings the worker runs with (for their drills). */
  effectsConfig: OnceflowConfig['effects'];
  worker?: Worker;
  /** Starts the worker (if not started); resolves once it is polling. */
  startWorker(): Promise<void>;
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The whole product against real servers: a fresh database, the run's Temporal
 * dev server on a task queue of its own, a worker, and the API (use app.inject).
 */
export interface TestStackOptions {
  worker?: boolean;
  env?: NodeJS.ProcessEnv;
  operations?: OperationRegistry;
  /** The provider route of every operation; default sim-primary/sim-small then sim-backup/sim-large. */
  route?: RouteStep[];
  /** Providers beside the two simulators. */
  extraProviders?: ProviderAdapter[];
  /** Verify every route step's contract at start, as the dev stack does (default true). */
  verify?: boolean;
  /** Wraps the database the worker's activities use (to slow or break some of its statements). */
  activityDb?: (pool: Pool) => Pool;
}

export async function startTestStack(opts: TestStackOptions = {}): Promise<TestStack> {
  const db = await createTestDatabase();
  const temporal = await connectDevTemporal();
  const sims = await startSimStack();
  const providers = createSimProviders({ primary: sims.primary.url, backup: sims.backup.url });
  for (const provider of opts.extraProviders ?? []) providers.set(provider.name, provider);
  const route = opts.route ?? SIM_ROUTE;
  const config = loadConfig({
    ONCEFLOW_RATE_LIMIT_PER_MINUTE: '100000',
    ONCEFLOW_ATTEMPT_TIMEOUT_MS: '2000',
    ONCEFLOW_HEARTBEAT_TIMEOUT_MS: '1000',
    ONCEFLOW_WORKFLOW_TASK_TIMEOUT_MS: '3000',
    ONCEFLOW_RECONCILE_INTERVAL_MS: '500',
    ONCEFLOW_ATTEMPT_BACKOFF_MS: '50',
    ONCEFLOW_EFFECT_LEASE_MS: '1500',
    ONCEFLOW_EFFECT_CALL_TIMEOUT_MS: '500',
    ONCEFLOW_EFFECT_BACKOFF_MS: '50',
    ONCEFLOW_MESSAGES_URL: sims.downstream.url,
    ...opts.env,
    TEMPORAL_NAMESPACE: temporal.namespace,
    ONCEFLOW_TASK_QUEUE: temporal.taskQueue,
  });
  const keys = parseApiKeys(`alice:${KEYS.alice},bob:${KEYS.bob}`, KEYS.operator);
  const metrics = createMetrics();
  const operations = opts.operations ?? createRegistry();
  const workflows: WorkflowTarget = { client: temporal.client, taskQueue: temporal.taskQueue, searchAttributes: true, workflowTaskTimeoutMs: config.temporal.workflowTaskTimeoutMs };
  const waiter = new JobWaiter(db.url);
  // As the API's start does: listening before the first request.
  await waiter.listen();
  const app = await buildApp({
    config: { ...config, keys },
    db: db.pool,
    workflows,
    operations,
    contracts: apiContracts(config, providers, () => route),
    effects: { adapters: createEffectRegistry({ config: config.effects, db: db.pool }), verificationMaxAgeMs: config.effects.verificationMaxAgeMs },
    metrics,
    waiter,
    temporalReady: async () => {
      await temporal.client.connection.workflowService.getSystemInfo({});
    },
    logger: false,
  });

  // As every API and worker does at start: the providers file's route is the baseline route version.
  await recordBaselines(db.pool, operations, () => route);

  if (opts.verify !== false) {
    await verifyContracts({ db: db.pool, operations, providers, routeFor: () => route }, {}, { samples: 1, timeoutMs: 5_000 });
    // As npm start does: the effects' drills, so recovery may rely on the claims they show (invariant 14).
    await verifyEffects(db.pool, createEffectRegistry({ config: config.effects, db: db.pool }));
  }

  const activities = createActivities(
    buildActivityDeps({ db: opts.activityDb ? opts.activityDb(db.pool) : db.pool, metrics, config, operations, providers, prices: SIM_PRICE_TABLE, routeFor: () => route, workflows }),
  );
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  const stack: TestStack = {
    app,
    sims,
    providers,
    db,
    temporal,
    workflows,
    metrics,
    activities,
    effectsConfig: config.effects,
    get worker() {
      return worker;
    },
    async startWorker() {
      if (worker) return;
      worker = await createWorker({
        connection: temporal.nativeConnection,
        temporal: config.temporal,
        activities,
        workflowBundle: workflowBundle(),
      });
      running = worker.run();
    },
    async stopWorker() {
      if (!worker) return;
      worker.shutdown();
      await running;
      worker = undefined;
    },
    async close() {
      await stack.stopWorker();
      await app.close();
      await waiter.close();
      await temporal.close();
      await sims.close();
      await db.drop();
    },
  };
  if (opts.worker !== false) await stack.startWorker();
  return stack;
}

/** Submits a support.reply intent as alice (or another key); returns the response. */
/**
 * Leaves the stack's effects unverified until the returned function runs
 * their drills again: recovery then relies on none of their claims, so a
 * send whose answer was lost goes to review (invariant 14). For tests that
 * need an effect in review.
 */
export async function withoutEffectVerifications(stack: TestStack): Promise<() => Promise<void>> {
  await stack.db.pool.query('DELETE FROM effect_verifications');
  return async () => {
    await verifyEffects(stack.db.pool, createEffectRegistry({ config: stack.effectsConfig, db: stack.db.pool }));
  };
}

export function submitReply(stack: TestStack, opts: { key?: string; message: string; ticketId?: string; apiKey?: string; wait?: number }) {
  return stack.app.inject({
    method: 'POST',
    url: '/v1/jobs',
    headers: {
      ...auth(opts.apiKey ?? KEYS.alice),
      'idempotency-key': opts.key ?? `key-${Math.random().toString(36).slice(2)}`,
      ...(opts.wait ? { prefer: `wait=${opts.wait}` } : {}),
    },
    payload: { operation: 'support.reply', input: { ticketId: opts.ticketId ?? 'T-100', customerMessage: opts.message, channel: 'email' } },
  });
}

/**
 * Submits a support reply as a new intent (202) and waits for the job to
 * satisfy `until` (default: terminal).
 */
export async function runReply(stack: TestStack, message: string, until: (job: any) => boolean = isTerminalJob): Promise<any> {
  const submitted = await submitReply(stack, { message });
  expect(submitted.statusCode).toBe(202);
  return waitForJob(stack, submitted.json().id, until);
}

/** The job as the API shows it to an operator. */
export async function readJob(stack: TestStack, id: string): Promise<any> {
  const response = await stack.app.inject({ method: 'GET', url: `/v1/jobs/${id}`, headers: auth(KEYS.operator) });
  if (response.statusCode !== 200) throw new Error(`GET job ${id}: ${response.statusCode} ${response.body}`);
  return response.json();
}

/** Polls the job until predicate holds; fails after timeoutMs with the job's last view. */
export async function waitForJob(stack: TestStack, id: string, predicate: (job: any) => boolean, timeoutMs = 20_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let job = await readJob(stack, id);
  while (!predicate(job)) {
    if (Date.now() > deadline) throw new Error(`job ${id} did not reach the expected state in ${timeoutMs} ms: ${JSON.stringify(job, null, 1)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    job = await readJob(stack, id);
  }
  return job;
}

export const isTerminalJob = (job: { status: string }): boolean => ['succeeded', 'failed', 'cancelled'].includes(job.status);

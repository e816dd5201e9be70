import type { Worker } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import { buildApp, type App } from '../../src/api/app';
import { JobWaiter } from '../../src/api/job-waiter';
import { loadConfig, parseApiKeys } from '../../src/config';
import { createMetrics, type Metrics } from '../../src/metrics/metrics';
import { createRegistry, type OperationRegistry } from '../../src/operations/registry';
import type { WorkflowTarget } from '../../src/temporal/starter';
import { createWorker } from '../../src/worker/worker';
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
  db: TestDatabase;
  temporal: DevTemporal;
  workflows: WorkflowTarget;
  metrics: Metrics;
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
export async function startTestStack(opts: { worker?: boolean; env?: NodeJS.ProcessEnv; operations?: OperationRegistry } = {}): Promise<TestStack> {
  const db = await createTestDatabase();
  const temporal = await connectDevTemporal();
  const config = loadConfig({
    ONCEFLOW_RATE_LIMIT_PER_MINUTE: '100000',
    ...opts.env,
    TEMPORAL_NAMESPACE: temporal.namespace,
    ONCEFLOW_TASK_QUEUE: temporal.taskQueue,
  });
  const keys = parseApiKeys(`alice:${KEYS.alice},bob:${KEYS.bob}`, KEYS.operator);
  const metrics = createMetrics();
  const workflows: WorkflowTarget = { client: temporal.client, taskQueue: temporal.taskQueue, searchAttributes: true };
  const waiter = new JobWaiter(db.url);
  const app = await buildApp({
    config: { ...config, keys },
    db: db.pool,
    workflows,
    operations: opts.operations ?? createRegistry(),
    metrics,
    waiter,
    temporalReady: async () => {
      await temporal.client.connection.workflowService.getSystemInfo({});
    },
    logger: false,
  });

  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  const stack: TestStack = {
    app,
    db,
    temporal,
    workflows,
    metrics,
    get worker() {
      return worker;
    },
    async startWorker() {
      if (worker) return;
      worker = await createWorker({
        connection: temporal.nativeConnection,
        namespace: temporal.namespace,
        taskQueue: temporal.taskQueue,
        activities: createActivities({ db: db.pool, metrics }),
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
      await db.drop();
    },
  };
  if (opts.worker !== false) await stack.startWorker();
  return stack;
}

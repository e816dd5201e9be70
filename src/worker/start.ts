import { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import type { Pool } from 'pg';
import { createActivities } from '../activities';
import { createEffectRegistry } from '../effects/registry';
import { verifyEffectsAtStart } from '../effects/verify/at-start';
import type { OnceflowConfig } from '../config';
import { createMetrics, type Metrics } from '../metrics/metrics';
import { recordOperationVersions } from '../ledger/operation-versions';
import { recordBaselines } from '../canary/baseline';
import { loadOperations, type LoadedOperations } from '../operations/load';
import { loadProviders } from '../providers/load';
import { connectTemporal, connectTemporalWorker, installTemporalRuntime } from '../temporal/connect';
import { ensureRetentionSchedule, ensureSweeperSchedule } from '../temporal/schedules';
import { WARM_UP_WORKFLOW, WARM_UP_WORKFLOW_ID_PREFIX } from '../temporal/contract';
import { hostname } from 'node:os';
import { warmUpTokenizers } from '../contracts/models';
import { warmUpActivationMessages } from '../temporal/message-warm-up';
import { buildActivityDeps } from './activity-deps';
import { createWorker } from './worker';

export interface RunningWorker {
  worker: Worker;
  close(): Promise<void>;
}

/**
 * Starts a worker polling config.temporal.taskQueue; close() drains it.
 * @throws OperationsFileError when the operations file is wrong, or changes an input schema under a version jobs were made with.
 */
export async function startWorker(
  config: OnceflowConfig,
  db: Pool,
  metrics: Metrics = createMetrics({ defaultMetrics: true }),
  loaded: LoadedOperations = loadOperations(config.operationsFile),
  /** Whether the effects' drills run before the worker takes tasks, when ONCEFLOW_EFFECTS_VERIFY_AT_START does not say (npm start: yes; npm run worker: no). */
  effects: { verifyByDefault: boolean; log: (line: string) => void } = { verifyByDefault: false, log: (line) => console.log(`worker: ${line}`) },
): Promise<RunningWorker> {
  installTemporalRuntime();
  const operations = loaded.registry;
  const { providers, prices, routeFor: route } = await loadProviders(config, operations);
  await recordOperationVersions(db, operations);
  await recordBaselines(db, operations, route);
  // The first job should cost what the hundredth does: the tokenizers it checks prompts with are built now.
  warmUpTokenizers([...operations.keys()].flatMap((name) => route(name).map((step) => step.model)));
  warmUpActivationMessages();
  const effectAdapters = createEffectRegistry({ config: config.effects, db, declared: loaded.httpEffects });
  // Invariant 14: what recovery may rely on is what the drills showed.
  if (config.effectsVerifyAtStart ?? effects.verifyByDefault) await verifyEffectsAtStart(db, effectAdapters, config.effects.verificationMaxAgeMs, effects.log);
  const connection = await connectTemporalWorker(config.temporal.connection);
  // The worker's own client: the sweeper starts job workflows with it, and it keeps the Schedules up to date.
  const clientConnection = await connectTemporal(config.temporal.connection);
  const client = new Client({ connection: clientConnection, namespace: config.temporal.namespace });
  const workflows = { client, taskQueue: config.temporal.taskQueue, searchAttributes: config.temporal.searchAttributes, workflowTaskTimeoutMs: config.temporal.workflowTaskTimeoutMs };
  const worker = await createWorker({
    connection,
    temporal: config.temporal,
    activities: createActivities(buildActivityDeps({ db, metrics, config, operations, providers, prices, routeFor: route, workflows, effectAdapters })),
  });
  const running = worker.run();
  await ensureRetentionSchedule(client, { taskQueue: config.temporal.taskQueue, retentionDays: config.retentionDays });
  await ensureSweeperSchedule(client, { taskQueue: config.temporal.taskQueue });
  if (config.temporal.warmUp) await warmUpWorker(client, config.temporal.taskQueue);
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

/**
 * Runs the warm-up workflow once and waits for it (at most a few seconds), so
 * the first job does not pay for first uses. On a task queue with several
 * workers it may warm another one; a warm-up that fails is reported and let
 * go, since it only saves the first job some time.
 */
async function warmUpWorker(client: Client, taskQueue: string): Promise<void> {
  const workflowId = `${WARM_UP_WORKFLOW_ID_PREFIX}${hostname()}-${process.pid}-${Date.now()}`;
  try {
    const handle = await client.workflow.start(WARM_UP_WORKFLOW, { workflowId, taskQueue, workflowExecutionTimeout: '30 seconds' });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('no answer within 10 s')), 10_000);
    });
    try {
      await Promise.race([handle.result(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  } catch (err) {
    console.warn(`worker: warm-up ${workflowId} did not finish (${(err as Error).message}); the first job pays for first uses`);
  }
}

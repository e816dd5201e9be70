import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createActivities, type AttemptSettings } from '../../src/activities';
import { requestDigest } from '../../src/jobs/digest';
import { jobWorkflowId } from '../../src/jobs/scope';
import { admitJob } from '../../src/ledger/jobs';
import { createMetrics, type Metrics } from '../../src/metrics/metrics';
import { createRegistry } from '../../src/operations/registry';
import { createOpenAiCompatibleProvider } from '../../src/providers/openai-compatible';
import { startSimStack, type SimStack } from '../../src/sim/stack';
import { JOB_WORKFLOW, type JobWorkflowInput } from '../../src/temporal/contract';
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
  /** Admits a support.reply job and starts its workflow; returns its ids. */
  startJob(message: string): Promise<{ jobId: string; workflowId: string }>;
  close(): Promise<void>;
}

/**
 * The real ledger, the real simulators and the real activities, on Temporal's
 * time-skipping test server: timers of hours pass in milliseconds.
 */
export async function startTimeSkippingStack(attempts: Partial<AttemptSettings> = {}): Promise<TimeSkippingStack> {
  const [env, db, sims] = await Promise.all([createTimeSkippingEnv(), createTestDatabase(), startSimStack()]);
  const metrics = createMetrics();
  const taskQueue = `ts-${randomUUID()}`;
  const activities = createActivities({
      db: db.pool,
      metrics,
      operations: createRegistry(),
      providers: new Map([
        [sims.primary.name, createOpenAiCompatibleProvider({ name: sims.primary.name, baseUrl: sims.primary.url, lookup: true })],
        [sims.backup.name, createOpenAiCompatibleProvider({ name: sims.backup.name, baseUrl: sims.backup.url, lookup: true })],
      ]),
      routeFor: () => [
        { provider: sims.primary.name, model: 'sim-small' },
        { provider: sims.backup.name, model: 'sim-large' },
      ],
      attempts: { timeoutMs: 1_000, heartbeatTimeoutMs: 5_000, reconcileIntervalMs: 10 * 60_000, maxAttempts: 3, backoffMs: 100, ...attempts },
  });
  return {
    env,
    db,
    sims,
    metrics,
    taskQueue,
    async withWorker(fn) {
      const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: workflowBundle(), activities });
      return worker.runUntil(fn);
    },
    async startJob(message) {
      const scope = { principalId: 'alice', operation: 'support.reply', idempotencyKey: randomUUID() };
      const input = { ticketId: 'T-9', customerMessage: message, channel: 'chat' };
      const { job } = await admitJob(db.pool, { ...scope, input, schemaVersion: 1, requestDigest: requestDigest(scope.operation, 1, input), workflowId: jobWorkflowId(scope) });
      const args: [JobWorkflowInput] = [{ jobId: job.id, searchAttributes: false }];
      await env.client.workflow.start(JOB_WORKFLOW, { taskQueue, workflowId: job.workflowId, args });
      return { jobId: job.id, workflowId: job.workflowId };
    },
    async close() {
      await env.teardown();
      await sims.close();
      await db.drop();
    },
  };
}

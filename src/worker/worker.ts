import { NativeConnection, Worker, type CompiledWorkerOptions, type WorkerOptions } from '@temporalio/worker';
import type { Activities } from '../activities';
import type { OnceflowConfig } from '../config';
import { prebuiltWorkflows } from './bundle';

export interface WorkerDeps {
  connection: NativeConnection;
  /** The namespace, task queue, sticky queue timeout, workflow cache size and isolate deadline the worker runs with. */
  temporal: Pick<OnceflowConfig['temporal'], 'namespace' | 'taskQueue' | 'stickyQueueTimeoutMs' | 'cachedWorkflows' | 'isolateTimeoutMs'>;
  activities: Activities;
  /** A prebuilt workflow bundle (tests build one per run); otherwise the one `npm run build` made, or the sources bundled now. */
  workflowBundle?: WorkerOptions['workflowBundle'];
}

/** A Temporal worker running Onceflow's job workflow and activities. */
export function createWorker(deps: WorkerDeps): Promise<Worker> {
  const { temporal } = deps;
  return Worker.create({
    connection: deps.connection,
    namespace: temporal.namespace,
    taskQueue: temporal.taskQueue,
    activities: deps.activities,
    // A lost worker's workflows move to another worker after this long, not Temporal's default 10 s.
    stickyQueueScheduleToStartTimeout: temporal.stickyQueueTimeoutMs,
    // Set, not left to the SDK: its default follows the heap limit (10 workflows under scripts/node-service's cap).
    maxCachedWorkflows: temporal.cachedWorkflows,
    // Not the SDK's 5 s: a pause of the process longer than that, during an activation, aborted the worker (see isolateTimeoutMs).
    ...isolateExecutionTimeout(temporal.isolateTimeoutMs),
    ...(deps.workflowBundle ? { workflowBundle: deps.workflowBundle } : prebuiltWorkflows()),
  });
}

/**
 * The SDK's isolateExecutionTimeout. SDK 1.24 leaves it out of WorkerOptions'
 * type ("not exposed at the moment", CompiledWorkerOptions has it) but takes it:
 * Worker.create spreads the options it is given over its defaults.
 */
function isolateExecutionTimeout(ms: number): Pick<CompiledWorkerOptions, 'isolateExecutionTimeout'> {
  return { isolateExecutionTimeout: ms };
}

import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Activities } from '../activities';
import type { OnceflowConfig } from '../config';
import { prebuiltWorkflows } from './bundle';

export interface WorkerDeps {
  connection: NativeConnection;
  /** The namespace, task queue, sticky queue timeout and workflow cache size the worker runs with. */
  temporal: Pick<OnceflowConfig['temporal'], 'namespace' | 'taskQueue' | 'stickyQueueTimeoutMs' | 'cachedWorkflows'>;
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
    ...(deps.workflowBundle ? { workflowBundle: deps.workflowBundle } : prebuiltWorkflows()),
  });
}

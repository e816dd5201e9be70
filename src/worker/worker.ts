import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Activities } from '../activities';
import { prebuiltWorkflows } from './bundle';

export interface WorkerDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: Activities;
  /** How long a workflow task waits for the worker that ran the workflow last (its sticky queue) before any worker may take it. */
  stickyQueueTimeoutMs?: number;
  /** A prebuilt workflow bundle (tests build one per run); otherwise the one `npm run build` made, or the sources bundled now. */
  workflowBundle?: WorkerOptions['workflowBundle'];
}

/** A Temporal worker running Onceflow's job workflow and activities. */
export function createWorker(deps: WorkerDeps): Promise<Worker> {
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    activities: deps.activities,
    ...(deps.stickyQueueTimeoutMs ? { stickyQueueScheduleToStartTimeout: deps.stickyQueueTimeoutMs } : {}),
    ...(deps.workflowBundle ? { workflowBundle: deps.workflowBundle } : prebuiltWorkflows()),
  });
}

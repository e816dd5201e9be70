import { existsSync } from 'node:fs';
import path from 'node:path';
import type { WorkerOptions } from '@temporalio/worker';

/**
 * The workflow code, bundled by `npm run build` (beside the compiled code in
 * dist/), so a worker starts without bundling and its first job runs as fast
 * as its hundredth.
 */
export const WORKFLOW_BUNDLE_FILE = 'workflow-bundle.js';

/**
 * The bundle built with this code, when there is one (a worker run from
 * dist/); otherwise the worker bundles the workflows itself (run from source).
 */
export function prebuiltWorkflows(): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  const built = path.join(__dirname, '..', WORKFLOW_BUNDLE_FILE);
  if (__filename.endsWith('.js') && existsSync(built)) return { workflowBundle: { codePath: built } };
  return { workflowsPath: require.resolve('../workflows') };
}

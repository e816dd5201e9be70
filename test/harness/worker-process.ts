import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { TestStack } from './stack';
import { readHarnessState } from './state';

/**
 * Starts a worker for the stack's task queue in a process of its own
 * (test/fixtures/worker-process.ts), so a test can SIGKILL it mid-flight.
 */
export function startWorkerProcess(stack: TestStack, env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const state = readHarnessState();
  const proc = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(__dirname, '..', 'fixtures', 'worker-process.ts')], {
    env: {
      ...process.env,
      ...env,
      DATABASE_URL: stack.db.url,
      TEMPORAL_ADDRESS: state.temporalAddress,
      TEMPORAL_NAMESPACE: stack.temporal.namespace,
      ONCEFLOW_TASK_QUEUE: stack.temporal.taskQueue,
      ONCEFLOW_MESSAGES_URL: stack.sims.downstream.url,
      SIM_PRIMARY_URL: stack.sims.primary.url,
      SIM_BACKUP_URL: stack.sims.backup.url,
      WORKFLOW_BUNDLE: state.workflowBundlePath,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: proc.stdout! }).once('line', () => resolve(proc));
    proc.once('exit', (code) => reject(new Error(`worker process exited with ${code}`)));
  });
}

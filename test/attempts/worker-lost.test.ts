import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { auth, isTerminalJob, KEYS, readJob, startTestStack, submitReply, waitForJob, type TestStack } from '../harness/stack';
import { readHarnessState } from '../harness/state';

describe('a worker killed mid-attempt', () => {
  const env = {
    ONCEFLOW_ATTEMPT_TIMEOUT_MS: '20000',
    ONCEFLOW_HEARTBEAT_TIMEOUT_MS: '1000',
    ONCEFLOW_RECONCILE_INTERVAL_MS: '300',
  };
  let stack: TestStack;
  let child: ChildProcess | undefined;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false, env });
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await stack.close();
  });

  function startWorkerProcess(): Promise<ChildProcess> {
    const state = readHarnessState();
    const proc = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(__dirname, '..', 'fixtures', 'worker-process.ts')], {
      env: {
        ...process.env,
        ...env,
        DATABASE_URL: stack.db.url,
        TEMPORAL_ADDRESS: state.temporalAddress,
        TEMPORAL_NAMESPACE: stack.temporal.namespace,
        ONCEFLOW_TASK_QUEUE: stack.temporal.taskQueue,
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

  it('leaves the attempt unknown, not failed, and starts no second attempt while it is unknown', async () => {
    // Arrange: a worker process takes the attempt; the provider records it and never answers.
    child = await startWorkerProcess();
    const jobId = (await submitReply(stack, { message: 'Hi @sim(sim-primary:hang)', ticketId: 'T-killed' })).json().id;
    await until(() => stack.sims.primary.requests().some((r) => r.messages.some((m) => m.content.includes('T-killed'))));

    // Act: the worker dies without a word; another worker takes over.
    child.kill('SIGKILL');
    await stack.startWorker();
    const unknown = await waitForJob(stack, jobId, (job) => job.attempts[0]?.status === 'unknown');
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // ten reconcile intervals

    // Assert
    const job = await readJob(stack, jobId);
    expect(unknown.attempts[0].error).toEqual({ class: 'worker_lost', detail: expect.any(String) });
    expect(job.status).toBe('awaiting_resolution');
    expect(job.attempts).toHaveLength(1);
    expect(job.attempts[0].status).toBe('unknown');
    expect(stack.sims.backup.requests()).toHaveLength(0);

    // And an operator's resolution is what lets it go on.
    const resolved = await stack.app.inject({
      method: 'POST',
      url: `/v1/jobs/${jobId}/attempts/${job.attempts[0].id}/resolution`,
      headers: auth(KEYS.operator),
      payload: { outcome: 'failed', reason: 'worker host lost; provider request presumed dropped' },
    });
    expect(resolved.statusCode).toBe(200);
    const done = await waitForJob(stack, jobId, isTerminalJob);
    expect(done.attempts.map((a: any) => [a.provider, a.status])).toEqual([
      ['sim-primary', 'failed'],
      ['sim-backup', 'succeeded'],
    ]);
  }, 60_000);
});

async function until(check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
